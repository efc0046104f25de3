import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/**
 * `/metrics` (Prometheus text), `/healthz` (the process is up) and `/readyz` (the edge has a
 * configuration to serve; it keeps serving the last one while the control plane is away, which
 * `edgeward_edge_control_plane_connected` shows) on an address of their own, apart from public traffic.
 */
export async function startMetricsServer(
  registry: Registry,
  ready: () => boolean,
  host: string,
  port: number,
): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => {
          response.writeHead(200, { 'content-type': registry.contentType });
          response.end(text);
        },
        (error: unknown) => {
          response.writeHead(500, { 'content-type': 'text/plain' });
          response.end(
            `collecting metrics failed: ${error instanceof Error ? error.message : String(error)}\n`,
          );
        },
      );
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const ok = path === '/healthz' || ready();
      response.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ status: ok ? 'ok' : 'waiting for the first configuration' }));
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' });
    response.end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}
