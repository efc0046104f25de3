import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ListenAddress } from '../../lib/listen-address.js';

export interface RunningServer {
  /** e.g. `http://127.0.0.1:38121` */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export type Handler = (request: IncomingMessage, response: ServerResponse) => void | Promise<void>;

/** A small HTTP server for operational endpoints (no framework: they serve a handful of paths). */
export async function listen(address: ListenAddress, handler: Handler): Promise<RunningServer> {
  const server: Server = createServer((request, response) => {
    Promise.resolve(handler(request, response)).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(`internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
