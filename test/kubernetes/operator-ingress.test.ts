import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  endpointAddress,
  endpointSkipReason,
  endpointSliceManifest,
  serviceManifest,
} from '../support/cluster-services.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { type Cr, condition, OperatorHarness } from '../support/operator-harness.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * A plain networking.k8s.io/v1 Ingress of the IngressClass edgeward, end to end: a real server, an
 * in-process edge with its HTTPS listener, and `edgeward operator` (a separate process) with
 * --edge-addr/--edge-ca of that edge, as in operator-https-edge.test.ts. The IngressClass of
 * `config/ingress/ingressclass.yaml` and an Ingress for shop.example.com with two paths to two
 * Services and a default backend are applied; the operator makes the CRs the Ingress owns
 * (TunnelCredential, HTTPSEdge, HTTPSEdgeRoutes for the paths, Prefix as whole path elements, and
 * the default backend, one Tunnel per Service port), their controllers make them Ready, and curl
 * through the edge reaches each Service by its path, the rest the default backend. Editing the
 * Ingress removes a route;
 * deleting it removes every owned CR and their resources on the server.
 *
 * The control plane runs no controller-manager: no EndpointSlice controller (the test writes the
 * slices, pointing at HTTP servers of this process on the run's endpoint address, a veth pair of
 * the global setup: skipped without root) and no garbage collector (the operator itself deletes
 * what a deleted Ingress owned).
 */

const run = promisify(execFile);
const h = new OperatorHarness('ingress');
const { eventually, waitGone, getCr, kubectl, namespace } = h;
const INGRESS_CLASS = fileURLToPath(new URL('../../config/ingress/ingressclass.yaml', import.meta.url));
const HOST = 'shop.example.com';
const INGRESS = 'shop';
const OWNED = ['tunnelcredentials', 'httpsedges', 'httpsedgeroutes', 'tunnels'] as const;

let edge: TestEdge | undefined;
let scratch: string;
const servers: Server[] = [];
let hostAddress: string;

/** One "pod" of the Service `name`: says who it is and what it was asked. */
async function startService(name: string): Promise<number> {
  const server = createServer((request, response) => {
    const body = `hello from ${name}: ${request.method} ${request.url}`;
    response.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
  server.listen(0, hostAddress);
  await once(server, 'listening');
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

/** A Service with one port `http` (80) and the EndpointSlice of its one pod on `port`. */
const serviceObjects = (name: string, port: number) => [
  serviceManifest(namespace, name),
  endpointSliceManifest(namespace, name, hostAddress, port),
];

/**
 * `/` exactly to the Service web (port by number), /api and every path under it to api (port by
 * name), anything else to the default backend fallback.
 */
const ingressObject = (withApi = true) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name: INGRESS, namespace },
  spec: {
    ingressClassName: 'edgeward',
    defaultBackend: { service: { name: 'fallback', port: { number: 80 } } },
    rules: [
      {
        host: HOST,
        http: {
          paths: [
            { path: '/', pathType: 'Exact', backend: { service: { name: 'web', port: { number: 80 } } } },
            ...(withApi
              ? [
                  {
                    path: '/api',
                    pathType: 'Prefix',
                    backend: { service: { name: 'api', port: { name: 'http' } } },
                  },
                ]
              : []),
          ],
        },
      },
    ],
  },
});

interface CurlResult {
  status: number;
  body: string;
}

/** curl through the edge's HTTPS port, shop.example.com resolved to 127.0.0.1. */
async function curl(path: string): Promise<CurlResult> {
  const port = edge?.edge.tlsPort ?? 0;
  try {
    const { stdout } = await run('curl', [
      '-sS',
      '-k',
      '--max-time',
      '5',
      '--resolve',
      `${HOST}:${port}:127.0.0.1`,
      '-w',
      '\n%{http_code}',
      `https://${HOST}:${port}${path}`,
    ]);
    const split = stdout.lastIndexOf('\n');
    return { status: Number(stdout.slice(split + 1)), body: stdout.slice(0, split) };
  } catch {
    return { status: 0, body: '' };
  }
}

const curlUntil = (what: string, path: string, ok: (result: CurlResult) => boolean) =>
  eventually(what, async () => {
    const result = await curl(path);
    return ok(result) ? result : undefined;
  });

/** The CRs of `plural` the Ingress owns (by the label the operator puts on them). */
async function ownedOf(plural: string): Promise<Cr[]> {
  const { stdout } = await kubectl([
    'get',
    '-n',
    namespace,
    `${plural}.edgeward.dev`,
    '-l',
    `edgeward.dev/ingress=${INGRESS}`,
    '-o',
    'json',
  ]);
  return (JSON.parse(stdout) as { items: Cr[] }).items;
}

/** Waits until the Ingress owns `counts` CRs of each kind, every one Ready for its generation. */
const waitOwnedReady = (counts: Record<(typeof OWNED)[number], number>) =>
  eventually(
    `the Ingress's CRs Ready (${JSON.stringify(counts)})`,
    async () => {
      const owned: Record<string, Cr[]> = {};
      for (const plural of OWNED) {
        const items = await ownedOf(plural);
        if (items.length !== counts[plural]) return undefined;
        for (const item of items) {
          const ready = condition(item, 'Ready');
          if (ready?.status !== 'True' || ready.observedGeneration !== item.metadata.generation)
            return undefined;
        }
        owned[plural] = items;
      }
      return owned;
    },
    60_000,
  );

beforeAll(async () => {
  hostAddress = endpointAddress();
  scratch = mkdtempSync(join(tmpdir(), 'edgeward-ingress-'));
  await h.start({
    operatorArgs: async (server) => {
      edge = await startTestEdge(server, { tls: true });
      const caFile = join(scratch, 'edge-ca.pem');
      writeFileSync(caFile, edge.tunnelCa);
      return ['--edge-addr', edge.tunnelAddr, '--edge-ca', caFile, '--edge-server-name', 'localhost'];
    },
  });
});

afterAll(async () => {
  await edge?.stop();
  await h.stop();
  for (const server of servers) server.close();
  rmSync(scratch, { recursive: true, force: true });
});

describeUnless(
  endpointSkipReason(),
  'an Ingress of the class edgeward: an HTTPS edge to three Services, from a plain Ingress',
  () => {
    /** Server ids of the owned CRs, read before the delete. */
    const ids: string[] = [];

    it('makes the CRs the Ingress owns, Ready, and curl reaches each Service by its path', async () => {
      const webPort = await startService('web');
      const apiPort = await startService('api');
      const fallbackPort = await startService('fallback');
      await kubectl(['apply', '-f', INGRESS_CLASS]);
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'List',
          items: [
            ...serviceObjects('web', webPort),
            ...serviceObjects('api', apiPort),
            ...serviceObjects('fallback', fallbackPort),
            ingressObject(),
          ],
        }),
      );

      const owned = await waitOwnedReady({
        tunnelcredentials: 1,
        httpsedges: 1,
        httpsedgeroutes: 4,
        tunnels: 3,
      });
      const [httpsEdge] = owned.httpsedges ?? [];
      expect(httpsEdge?.status?.hostports).toEqual([`${HOST}:443`]);
      const routes = (owned.httpsedgeroutes ?? []).map(
        (route) => `${route.spec.matchType} ${route.spec.match}`,
      );
      expect(routes.sort()).toEqual([
        `exact_path ${HOST}/`,
        `exact_path ${HOST}/api`,
        `path_prefix ${HOST}/`,
        `path_prefix ${HOST}/api/`,
      ]);
      const targets = (owned.tunnels ?? []).map((tunnel) => tunnel.status?.forwardTarget);
      expect(targets.sort()).toEqual(
        [apiPort, webPort, fallbackPort].map((port) => `http://${hostAddress}:${port}`).sort(),
      );
      // Owned by the Ingress: the garbage collector of a real cluster deletes them with it.
      const ingress = JSON.parse(
        (await kubectl(['get', '-n', namespace, 'ingress', INGRESS, '-o', 'json'])).stdout,
      ) as { metadata: { uid: string } };
      for (const items of Object.values(owned)) {
        for (const item of items) {
          const references = (item.metadata as { ownerReferences?: { uid: string; controller?: boolean }[] })
            .ownerReferences;
          expect(references).toEqual([
            expect.objectContaining({ uid: ingress.metadata.uid, controller: true }),
          ]);
          ids.push(String(item.status?.id));
        }
      }

      const web = await curlUntil('curl / to reach web', '/', (result) => result.status === 200);
      expect(web.body).toBe('hello from web: GET /');
      const api = await curlUntil(
        'curl /api/items to reach api',
        '/api/items',
        (result) => result.status === 200,
      );
      expect(api.body).toBe('hello from api: GET /api/items');
      // Prefix by path elements: /api itself too, not /apix; Exact: only / itself goes to web. What
      // no rule matches goes to the default backend.
      expect((await curl('/api')).body).toBe('hello from api: GET /api');
      expect((await curl('/apix')).body).toBe('hello from fallback: GET /apix');
      expect((await curl('/other')).body).toBe('hello from fallback: GET /other');

      // kubectl get ingress shows where it is served.
      const address = await eventually('the Ingress status to name its host', async () => {
        const { stdout } = await kubectl([
          'get',
          '-n',
          namespace,
          'ingress',
          INGRESS,
          '-o',
          'jsonpath={.status.loadBalancer.ingress[*].hostname}',
        ]);
        return stdout.trim() || undefined;
      });
      expect(address).toBe(HOST);

      // A reconcile of the unchanged Ingress writes nothing (no CR replaced, no status rewritten).
      await h.settled();
      const reconciles = await h.metricSum('edgeward_operator_reconcile_total', { kind: 'Ingress' });
      const writes = await h.operatorWrites();
      await kubectl(['label', '--overwrite', '-n', namespace, 'ingress', INGRESS, 'poke=1']);
      await eventually('a reconcile of the Ingress', async () =>
        (await h.metricSum('edgeward_operator_reconcile_total', { kind: 'Ingress' })) > reconciles
          ? true
          : undefined,
      );
      await h.settled();
      expect(await h.operatorWrites()).toBe(writes);
    });

    it('follows an edit of the Ingress: the path removed goes to the default backend', async () => {
      await kubectl(['apply', '-f', '-'], JSON.stringify(ingressObject(false)));
      await waitOwnedReady({ tunnelcredentials: 1, httpsedges: 1, httpsedgeroutes: 2, tunnels: 2 });
      const gone = await curlUntil('/api to be served by api no more', '/api/items', (result) =>
        result.body.startsWith('hello from fallback'),
      );
      expect(gone.status).toBe(200);
      expect((await curl('/')).body).toBe('hello from web: GET /');
    });

    it('deleting the Ingress removes the CRs it owned and their resources on the server', async () => {
      const owned = await waitOwnedReady({
        tunnelcredentials: 1,
        httpsedges: 1,
        httpsedgeroutes: 2,
        tunnels: 2,
      });
      const edgeId = String(owned.httpsedges?.[0]?.status?.id);
      const credentialId = String(owned.tunnelcredentials?.[0]?.status?.id);
      expect(ids).toContain(edgeId);

      await kubectl(['delete', '-n', namespace, 'ingress', INGRESS, '--wait=false']);
      for (const plural of OWNED) {
        for (const item of owned[plural] ?? []) await waitGone(plural, item.metadata.name);
        expect(await ownedOf(plural)).toEqual([]);
      }
      expect((await h.t.api('GET', `/edges/https/${edgeId}`)).status).toBe(404);
      expect((await h.t.api('GET', `/credentials/${credentialId}`)).status).toBe(404);
      const after = await curlUntil(
        'the edge to stop serving the host',
        '/',
        (result) => result.status !== 200,
      );
      expect(after.body).not.toContain('hello from web');
      expect(await getCr('httpsedges', owned.httpsedges?.[0]?.metadata.name ?? '')).toBeUndefined();
    });
  },
);
