import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import { Pages } from '../pages.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

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

/** A WebSocket opening handshake RFC 6455 §4.2.1 accepts (what `ws` would otherwise answer 400 to). */
function isWebSocketHandshake(method: string, headers: IncomingHttpHeaders): boolean {
  const key = headers['sec-websocket-key'];
  return (
    method === 'GET' &&
    headers.upgrade?.toLowerCase() === 'websocket' &&
    headers['sec-websocket-version'] === '13' &&
    typeof key === 'string' &&
    /^[+/0-9A-Za-z]{22}==$/.test(key)
  );
}

/** Completes the handshakes of every route (no server of its own: the HTTPS front hands them over). */
const webSockets = new WebSocketServer({ noServer: true, maxPayload: 16 << 20 });

/**
 * `websocket_tcp_converter`: the route carries WebSocket only (a plain request gets 426, another
 * upgrade 400); the edge completes the handshake itself and carries each message to the agent's
 * TCP target.
 */
export const websocketTcpConverterModule: EdgeRouteModule<ModuleConfig<'websocket_tcp_converter'>> = {
  schema: ROUTE_MODULE_SCHEMAS.websocket_tcp_converter.input,
  compile() {
    return {
      onRequest(exchange) {
        const { request } = exchange;
        if (!request.upgrade) return exchange.page(Pages.notWebSocket());
        if (!isWebSocketHandshake(request.method, request.headers)) {
          return exchange.page(Pages.badRequest('this route takes WebSocket handshakes only'));
        }
        return undefined;
      },
      onUpgrade({ request, socket, head, stream }) {
        webSockets.handleUpgrade(request, socket, head, (webSocket) =>
          carryWebSocketAsTcp(webSocket, stream),
        );
        return true;
      },
    };
  },
};
