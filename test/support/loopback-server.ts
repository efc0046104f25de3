import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/** Listens on a free port of 127.0.0.1 and answers that port. */
export async function listenOnLoopback(server: HttpServer | HttpsServer): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** Closes the server and every connection it still has (keep-alive ones included), and waits. */
export async function closeNow(server: HttpServer | HttpsServer | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  server.close();
  await once(server, 'close');
}

/**
 * A local HTTP "service" on 127.0.0.1 answering every request `200` with `name` (what a test
 * carries through a tunnel to tell which one answered); `servers` gets it, to be closed later.
 */
export async function namedService(name: string, servers: HttpServer[]): Promise<number> {
  const service = createHttpServer((request, response) => {
    request.resume();
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(name);
  });
  servers.push(service);
  return listenOnLoopback(service);
}
