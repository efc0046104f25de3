import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ListenAddress {
  host: string;
  port: number;
}

/**
 * Parses a listen flag as Kubernetes components take them: `:8080` (all interfaces),
 * `127.0.0.1:8080`, `[::1]:8080`, or `0` / empty to disable (undefined). Port 0 = any free port.
 */
export function parseListenAddress(value: string | undefined): ListenAddress | undefined {
  const text = (value ?? '').trim();
  if (text === '' || text === '0') return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port > 65_535)
    throw new Error(`listen address ${JSON.stringify(value)} is not HOST:PORT or :PORT`);
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

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
