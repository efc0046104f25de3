import { execFile } from 'node:child_process';
import { once } from 'node:events';
import {
  createServer as createHttpServer,
  type Server as HttpServer,
  type IncomingHttpHeaders,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import type { EdgeOptions } from '../../src/edge/edge.js';
import { startTestAgent, startTestEdge, type TestEdge } from './edge.js';
import { type CurlResult, curlHttps } from './https-curl.js';
import { startTestServer, type TestServer } from './server.js';

/**
 * The rig of the HTTPS route module tests (https-modules-*.test.ts), after https-edge.test.ts: a
 * real server, a real `Edge` with its TLS listener, our agent, and a local HTTP service that records
 * every request it gets. Edges, routes and modules are made through the API; curl is the client.
 */
export const run = promisify(execFile);

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface RouteSpec {
  match_type: 'exact_path' | 'path_prefix';
  match: string;
  /** Module fields of the route body (`ip_restriction`, `policy`, ...). */
  modules?: Record<string, unknown>;
  /** false: no backend module. */
  backend?: boolean;
}

/** A text body big enough to be worth compressing, and recognisable after a round trip. */
export const BIG_TEXT = Array.from(
  { length: 4000 },
  (_, index) => `line ${index}: the quick brown fox jumps over the lazy dog\n`,
).join('');

export interface Harness {
  t: TestServer;
  edge: TestEdge;
  servicePort: number;
  /** What the service got, in order; cleared after each test. */
  seen: SeenRequest[];
  /** The status `/flaky` answers with. */
  flaky: { status: number };
  create(path: string, body: unknown): Promise<Record<string, unknown>>;
  /**
   * An HTTPS edge for `host` (with edge-level `edgeModules`), a tunnel-group backend with an agent
   * of it online forwarding to `forward` (the service by default), and `routes` in order. Make the
   * route a test probes for readiness the last one: the edge gets each snapshot whole.
   */
  httpsEdge(
    host: string,
    routes: RouteSpec[],
    options?: { edgeModules?: Record<string, unknown>; forward?: string; agent?: boolean },
  ): Promise<{ edge: Record<string, unknown>; routes: Record<string, unknown>[] }>;
  curl(host: string, path: string, args?: string[]): Promise<CurlResult>;
}

/** Registers the hooks that start and stop the rig; its fields are set once `beforeAll` ran. */
export function useHarness(
  options: { identityProviderCas?: string[]; httpsClientLimits?: EdgeOptions['httpsClientLimits'] } = {},
): Harness {
  const agents: Agent[] = [];
  let service: HttpServer | undefined;
  const harness = {
    seen: [] as SeenRequest[],
    flaky: { status: 500 },
  } as Harness;

  beforeAll(async () => {
    harness.t = await startTestServer();
    harness.edge = await startTestEdge(harness.t, {
      tls: true,
      ...(options.identityProviderCas && { identityProviderCas: options.identityProviderCas }),
      ...(options.httpsClientLimits && { httpsClientLimits: options.httpsClientLimits }),
    });
    service = createHttpServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const url = request.url ?? '/';
        harness.seen.push({
          method: request.method ?? '',
          url,
          headers: request.headers,
          body: Buffer.concat(chunks),
        });
        if (url === '/big') {
          response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
          response.end(BIG_TEXT);
          return;
        }
        if (url === '/flaky') {
          response.writeHead(harness.flaky.status, { 'content-type': 'text/plain' });
          response.end(`flaky: ${harness.flaky.status}`);
          return;
        }
        response.writeHead(200, {
          'content-type': 'text/plain',
          'x-upstream-kept': 'kept',
          'x-upstream-internal': 'for the edge only',
        });
        response.end(`service: ${request.method} ${url}`);
      });
    });
    service.listen(0, '127.0.0.1');
    await once(service, 'listening');
    harness.servicePort = (service.address() as AddressInfo).port;
  });

  afterEach(() => {
    for (const agent of agents.splice(0)) agent.stop();
    harness.seen.length = 0;
    harness.flaky.status = 500;
  });

  afterAll(async () => {
    await harness.edge?.stop();
    service?.closeAllConnections();
    service?.close();
    await harness.t?.stop();
  });

  harness.create = async (path, body) => {
    const response = await harness.t.api('POST', path, body);
    expect(response.status, `${path}: ${response.text}`).toBe(201);
    return response.body;
  };

  harness.httpsEdge = async (host, routes, edgeOptions = {}) => {
    const credential = await harness.create('/credentials', {});
    const backend = await harness.create('/backends/tunnel_group', { labels: { https: host } });
    const edge = await harness.create('/edges/https', {
      hostports: [`${host}:443`],
      ...edgeOptions.edgeModules,
    });
    const created: Record<string, unknown>[] = [];
    for (const route of routes) {
      created.push(
        await harness.create(`/edges/https/${edge.id}/routes`, {
          match_type: route.match_type,
          match: route.match,
          ...(route.backend !== false && { backend: { backend_id: backend.id } }),
          ...route.modules,
        }),
      );
    }
    if (edgeOptions.agent !== false) {
      const agent = startTestAgent(harness.edge, {
        authtoken: String(credential.token),
        labels: { https: host },
        forward: edgeOptions.forward ?? `http://127.0.0.1:${harness.servicePort}`,
      });
      agents.push(agent);
      await once(agent, 'session');
    }
    return { edge, routes: created };
  };

  harness.curl = (host, path, args = []) => curlHttps(host, harness.edge.edge.tlsPort, path, args);

  return harness;
}

export { eventually } from './eventually.js';
export { type CurlResult, headerOf } from './https-curl.js';

/** The requests the service saw for `path` (exact, query included). */
export function seenAt(seen: readonly SeenRequest[], path: string): SeenRequest[] {
  return seen.filter((request) => request.url === path);
}
