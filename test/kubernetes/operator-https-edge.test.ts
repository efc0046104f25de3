import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KIND_DEFINITIONS } from '../../src/operator/kinds.js';
import {
  endpointAddress,
  endpointSkipReason,
  endpointSliceManifest,
  serviceManifest,
} from '../support/cluster-services.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { type CurlResult, curlHttps } from '../support/https-curl.js';
import { type Cr, OperatorHarness } from '../support/operator-harness.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * The HTTPS edge sample end to end: a real server, an in-process edge fed by it with its public TLS
 * listener on, and `edgeward operator` (a separate process) started with --edge-addr/--edge-ca of
 * that edge. `config/samples/https-edge.yaml` is applied as it is: a TunnelCredential, an IPPolicy,
 * an HTTPSEdge, an HTTPSEdgeRoute with modules and a Tunnel forwarding to the Service web. curl
 * through the edge's HTTPS port (web.example.com resolved to 127.0.0.1) reaches the service, with
 * the route's modules applied; edits of the CRs are followed by the edge; deleting the sample
 * removes its resources from the server.
 *
 * As in operator-tunnels.test.ts, the control plane has no EndpointSlice controller: the Service's
 * EndpointSlice is written by the test, pointing at an HTTP server of this process on the run's
 * endpoint address (the apiserver refuses loopback endpoint addresses); skipped without root.
 */

const h = new OperatorHarness('https-edge');
const { eventually, waitFor, waitGone, getCr, kubectl, namespace } = h;
const SAMPLE = fileURLToPath(new URL('../../config/samples/https-edge.yaml', import.meta.url));
const HOST = 'web.example.com';

/** The sample's objects, in its order: kind, name and the CRD plural of the kind. */
const sampleObjects = parseAllDocuments(readFileSync(SAMPLE, 'utf8')).map((document) => {
  const object = document.toJS() as { kind: string; metadata: { name: string } };
  const definition = KIND_DEFINITIONS.find((kind) => kind.kind === object.kind);
  if (!definition) throw new Error(`the sample has a kind the operator does not know: ${object.kind}`);
  return { kind: object.kind, name: object.metadata.name, plural: definition.plural };
});
const objectOf = (kind: string) => {
  const object = sampleObjects.find((candidate) => candidate.kind === kind);
  if (!object) throw new Error(`the sample has no ${kind}`);
  return object;
};

let edge: TestEdge | undefined;
let scratch: string;
let service: Server | undefined;
let hostAddress: string;
const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
/** A body worth compressing (text, well above the 1 KiB minimum). */
const BIG = 'hello from web, again and again\n'.repeat(512);

/** The Service's one "pod": says what it was asked, or a large text body for /big. */
async function startService(): Promise<number> {
  service = createServer((request, response) => {
    seen.push({ url: request.url ?? '', headers: request.headers });
    const body = request.url === '/big' ? BIG : `hello from web: ${request.method} ${request.url}`;
    response.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
  service.listen(0, hostAddress);
  await once(service, 'listening');
  return (service.address() as AddressInfo).port;
}

const serviceObject = () => serviceManifest(namespace, 'web');
const sliceObject = (port: number) => endpointSliceManifest(namespace, 'web', hostAddress, port);

/** curl through the edge's HTTPS port, web.example.com resolved to 127.0.0.1. */
const curl = (path: string, args: string[] = []): Promise<CurlResult> =>
  curlHttps(HOST, edge?.edge.tlsPort ?? 0, path, args);

/** curl until `ok` (the edge applies its feed within a second of the server's change). */
const curlUntil = (what: string, path: string, ok: (result: CurlResult) => boolean, args: string[] = []) =>
  eventually(what, async () => {
    const result = await curl(path, args);
    return ok(result) ? result : undefined;
  });

const header = (result: CurlResult, name: string) =>
  new RegExp(`^${name}: *(.*?)\\r?$`, 'im').exec(result.headers)?.[1];

beforeAll(async () => {
  hostAddress = endpointAddress();
  scratch = mkdtempSync(join(tmpdir(), 'edgeward-https-edge-'));
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
  service?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describeUnless(
  endpointSkipReason(),
  'the HTTPS edge sample: a Service behind an HTTPS edge with modules, from manifests alone',
  () => {
    /** Server ids of the sample's objects, read before the delete. */
    const ids: Record<string, string> = {};

    it('accepts the sample (server-side dry run against the CRDs)', async () => {
      const { stdout } = await kubectl(['apply', '--dry-run=server', '-n', namespace, '-f', SAMPLE]);
      for (const { kind, name } of sampleObjects) {
        expect(stdout).toContain(`${kind.toLowerCase()}.edgeward.dev/${name} created (server dry run)`);
      }
    });

    it('applies the sample: every object Ready, and curl through the edge reaches the Service with the modules', async () => {
      const servicePort = await startService();
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'List',
          items: [serviceObject(), sliceObject(servicePort)],
        }),
      );
      await kubectl(['apply', '-n', namespace, '-f', SAMPLE]);

      const ready: Record<string, Cr> = {};
      for (const { kind, plural, name } of sampleObjects) ready[kind] = await waitFor(plural, name);
      expect(ready.HTTPSEdge?.status?.hostports).toEqual([`${HOST}:443`]);
      const route = ready.HTTPSEdgeRoute;
      expect(route?.status?.edgeId).toBe(ready.HTTPSEdge?.status?.id);
      expect(String(route?.status?.backendId)).toMatch(/^bkdtg_/);
      expect(ready.Tunnel?.status?.forwardTarget).toBe(`http://${hostAddress}:${servicePort}`);
      // status.id: the server id of each resource; a Tunnel's is its session's (it makes nothing on the server).
      for (const [kind, cr] of Object.entries(ready)) ids[kind] = String(cr.status?.id);
      ids.backend = String(route?.status?.backendId);

      // The route's backend is the tunnel group the Tunnel's session joined.
      const backend = await h.t.api<{ labels: Record<string, string> }>(
        'GET',
        `/backends/tunnel_group/${ids.backend}`,
      );
      expect(backend.body.labels).toEqual({ app: 'web' });

      const answer = await curlUntil(
        'curl through the HTTPS edge to reach the Service',
        '/hello',
        (result) => result.status === 200,
        ['-H', 'X-Debug: please drop me'],
      );
      expect(answer.body).toBe('hello from web: GET /hello');
      // responseHeaders.add
      expect(header(answer, 'x-served-by')).toBe('edgeward');
      expect(header(answer, 'strict-transport-security')).toBe('max-age=31536000');
      // requestHeaders.add / remove, and the forwarding headers of the edge.
      const request = seen.find((entry) => entry.url === '/hello');
      expect(request?.headers).toMatchObject({
        'x-edge-host': HOST,
        'x-forwarded-for': '127.0.0.1',
        'x-forwarded-proto': 'https',
      });
      expect(request?.headers['x-debug']).toBeUndefined();

      // compression: a large text body is encoded for a client that accepts it, and not otherwise.
      const compressed = await curl('/big', ['--compressed']);
      expect(compressed.status).toBe(200);
      expect(header(compressed, 'content-encoding')).toMatch(/^(br|gzip)$/);
      expect(compressed.body).toBe(BIG);
      const plain = await curl('/big');
      expect(header(plain, 'content-encoding')).toBeUndefined();
      expect(plain.body).toBe(BIG);
    });

    it('follows edits: a deny rule in the IPPolicy refuses the client, a route edit lifts it and changes a header', async () => {
      const policy = objectOf('IPPolicy');
      const route = objectOf('HTTPSEdgeRoute');
      await kubectl([
        'patch',
        '-n',
        namespace,
        `${policy.plural}.edgeward.dev`,
        policy.name,
        '--type=json',
        '-p',
        JSON.stringify([
          { op: 'add', path: '/spec/rules/-', value: { cidr: '127.0.0.1/32', action: 'deny' } },
        ]),
      ]);
      const denied = await waitFor(policy.plural, policy.name);
      expect(denied.status?.rules?.map((rule) => `${rule.cidr} ${rule.action}`)).toContain(
        '127.0.0.1/32 deny',
      );
      await curlUntil('the edge to refuse 127.0.0.1', '/hello', (result) => result.status === 403);
      // Refused at the edge: the service never sees the request.
      const requestsBefore = seen.length;
      const refused = await curl('/hello');
      expect(refused.status).toBe(403);
      expect(header(refused, 'edgeward-error')).toBe('ip-denied');
      expect(seen).toHaveLength(requestsBefore);

      await kubectl([
        'patch',
        '-n',
        namespace,
        `${route.plural}.edgeward.dev`,
        route.name,
        '--type=merge',
        '-p',
        JSON.stringify({
          spec: { ipRestriction: { enabled: false }, responseHeaders: { add: { 'X-Served-By': 'edited' } } },
        }),
      ]);
      await waitFor(route.plural, route.name);
      const edited = await curlUntil(
        'the edge to follow the route edit',
        '/hello',
        (result) => result.status === 200 && header(result, 'x-served-by') === 'edited',
      );
      expect(edited.body).toBe('hello from web: GET /hello');
      expect(header(edited, 'strict-transport-security')).toBe('max-age=31536000');
    });

    it('deleting the sample removes its objects and their resources on the server', async () => {
      const sessionsOf = async () =>
        (
          await h.t.api<{ tunnel_sessions: { id: string }[] }>('GET', '/tunnel_sessions')
        ).body.tunnel_sessions.map((session) => session.id);
      expect(await sessionsOf()).toContain(ids.Tunnel);

      await kubectl(['delete', '-n', namespace, '-f', SAMPLE, '--wait=false']);
      for (const { plural, name } of sampleObjects) await waitGone(plural, name);

      const paths = {
        TunnelCredential: `/credentials/${ids.TunnelCredential}`,
        IPPolicy: `/ip_policies/${ids.IPPolicy}`,
        HTTPSEdge: `/edges/https/${ids.HTTPSEdge}`,
        HTTPSEdgeRoute: `/edges/https/${ids.HTTPSEdge}/routes/${ids.HTTPSEdgeRoute}`,
        backend: `/backends/tunnel_group/${ids.backend}`,
      };
      for (const [what, path] of Object.entries(paths)) {
        expect((await h.t.api('GET', path)).status, `${what} ${path}`).toBe(404);
      }
      await eventually('the Tunnel session to leave the API', async () =>
        (await sessionsOf()).includes(String(ids.Tunnel)) ? undefined : true,
      );
      const gone = await curlUntil(
        'the edge to stop serving the host',
        '/hello',
        (result) => result.status !== 200,
      );
      expect(gone.body).not.toContain('hello from web');
      for (const { plural, name } of sampleObjects) expect(await getCr(plural, name)).toBeUndefined();
    });
  },
);
