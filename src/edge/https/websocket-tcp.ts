import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';

/**
 * `websocket_tcp_converter`: the client speaks WebSocket, the service behind the agent plain TCP.
 * Each message's payload is written to the agent's stream as it is; bytes from the service go back
 * as binary messages. Either side closing closes the other; backpressure follows the stream.
 */
export function carryWebSocketAsTcp(webSocket: WebSocket, stream: Duplex): void {
  webSocket.on('message', (data, isBinary) => {
    const chunk = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (!stream.write(isBinary ? chunk : Buffer.from(chunk))) {
      webSocket.pause();
      stream.once('drain', () => webSocket.resume());
    }
  });
  stream.on('data', (chunk: Buffer) => {
    webSocket.send(chunk, { binary: true });
    // ws buffers what the client has not taken yet: hold the service back past a megabyte of it.
    if (webSocket.bufferedAmount > 1 << 20) {
      stream.pause();
      const resume = setInterval(() => {
        if (webSocket.bufferedAmount <= 1 << 20 || webSocket.readyState !== webSocket.OPEN) {
          clearInterval(resume);
          stream.resume();
        }
      }, 10);
    }
  });
  stream.on('end', () => webSocket.close(1000, 'the service closed the connection'));
  stream.on('error', () => webSocket.close(1011, 'the service connection failed'));
  webSocket.on('close', () => stream.destroy());
  webSocket.on('error', () => stream.destroy());
}
