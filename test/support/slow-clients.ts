import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';

/**
 * Hostile clients that hold connections without finishing anything: a TLS handshake stalled after
 * its ClientHello, a request head (or body) sent a byte at a time. They only send; the tests watch
 * when the edge closes on them.
 */

/** The bytes of a real TLS ClientHello naming `servername`, as a client would send them first. */
export async function clientHelloFor(servername: string): Promise<Buffer> {
  const sink = net.createServer();
  sink.listen(0, '127.0.0.1');
  await once(sink, 'listening');
  try {
    const received = new Promise<Buffer>((resolve) =>
      sink.once('connection', (socket) => {
        socket.once('data', (chunk: Buffer) => {
          resolve(chunk);
          socket.destroy();
        });
      }),
    );
    const client = tls.connect({
      host: '127.0.0.1',
      port: (sink.address() as net.AddressInfo).port,
      servername,
      ALPNProtocols: ['http/1.1'],
      rejectUnauthorized: false,
    });
    // The sink hangs up after the ClientHello: that is the whole point, not a failure.
    client.on('error', () => {});
    return await received;
  } finally {
    sink.close();
  }
}

/** Writes `text` to `socket` one character every `everyMs` until it is all sent or the socket closes. */
export function trickle(socket: net.Socket, text: string, everyMs: number): void {
  let at = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || !socket.writable || at >= text.length) {
      clearInterval(timer);
      return;
    }
    socket.write(text[at++] ?? '', 'latin1');
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
}

/** Resolves with how long after `since` (ms, `performance.now()`) the socket closed. */
export function closedAfter(socket: net.Socket, since: number): Promise<number> {
  const elapsed = () => performance.now() - since;
  if (socket.destroyed) return Promise.resolve(elapsed());
  // 'close' only: a reset is a close too here (events.once would reject on 'error').
  return new Promise((resolve) => socket.once('close', () => resolve(elapsed())));
}
