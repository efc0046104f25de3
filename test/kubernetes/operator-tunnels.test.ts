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
import { condition, OperatorHarness, type Secret, secretValue } from '../support/operator-harness.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * Tunnel end to end: a real server, an in-process edge fed by it, and `edgeward operator` (a
 * separate process) started with --edge-addr/--edge-ca/--edge-server-name of that edge. A
 * TunnelCredential, a ReservedAddress and a TCPEdge whose backend is a tunnel group are applied as
 * CRs, then a Tunnel binding that group and forwarding to a Service: the operator's own agent
 * opens the session, and curl through the edge's TCP port reaches the service.
 *
 * The test control plane is a kube-apiserver and etcd only: no kube-proxy, no pods, no DNS, no
 * EndpointSlice controller. So the Service's EndpointSlice is written by the test, pointing at an
 * HTTP server of this process on the run's endpoint address (a veth pair of the global setup,
 * cluster-services.ts): the apiserver refuses loopback endpoint addresses (127.0.0.0/8, ::1), and
 * test traffic stays off this machine's own interfaces. Without root to make it, skipped.
 */

const run = promisify(execFile);
const h = new OperatorHarness('tunnels');
const { apply, yamlOf, getCr, eventually, waitFor, kubectl, namespace, suffix } = h;
const SAMPLE = fileURLToPath(new URL('../../config/samples/tunnel.yaml', import.meta.url));

let edge: TestEdge | undefined;
let scratch: string;
const services: Server[] = [];
let hostAddress: string;

/** A local "pod": an HTTP server on the host address that says who it is. */
async function startService(name: string): Promise<number> {
  const server = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(`hello from ${name}: ${request.method} ${request.url}`);
  });
  server.listen(0, hostAddress);
  await once(server, 'listening');
  services.push(server);
  return (server.address() as AddressInfo).port;
}

const serviceObject = (name: string) => serviceManifest(namespace, name);
const sliceObject = (name: string, port: number, ready = true) =>
  endpointSliceManifest(namespace, name, hostAddress, port, ready);

const applyObjects = (...objects: object[]) =>
  kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));

async function curl(port: number): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run('curl', ['-sS', '--max-time', '5', `http://127.0.0.1:${port}/path?q=1`]);
    return { code: 0, stdout };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string };
    return { code: failure.code ?? -1, stdout: failure.stdout ?? '' };
  }
}

/** curl through the edge until it answers `expected` (the edge applies its feed within a second). */
const curlUntil = (port: number, expected: string) =>
  eventually(`curl through port ${port} to answer '${expected}'`, async () => {
    const answer = await curl(port);
    return answer.code === 0 && answer.stdout === expected ? answer.stdout : undefined;
  });

const sessionIds = async (): Promise<string[]> => {
  const response = await h.t.api<{ tunnel_sessions: { id: string }[] }>('GET', '/tunnel_sessions');
  expect(response.status).toBe(200);
  return response.body.tunnel_sessions.map((session) => session.id);
};

beforeAll(async () => {
  hostAddress = endpointAddress();
  scratch = mkdtempSync(join(tmpdir(), 'edgeward-tunnels-'));
  await h.start({
    operatorArgs: async (server) => {
      edge = await startTestEdge(server);
      const caFile = join(scratch, 'edge-ca.pem');
      writeFileSync(caFile, edge.tunnelCa);
      return ['--edge-addr', edge.tunnelAddr, '--edge-ca', caFile, '--edge-server-name', 'localhost'];
    },
  });
});

afterAll(async () => {
  await edge?.stop();
  await h.stop();
  for (const server of services) server.close();
  rmSync(scratch, { recursive: true, force: true });
});

describeUnless(endpointSkipReason(), 'Tunnel: the operator carries a tunnel group to a Service', () => {
  const labels = { app: 'web', run: suffix };
  let edgePort = 0;
  let sessionId = '';

  it('opens a session the API lists, and curl through the TCP edge reaches the Service', async () => {
    const servicePort = await startService('pod-1');
    await apply(
      yamlOf('TunnelCredential', 'web-agent', { acl: ['bind:app=web', `bind:run=${suffix}`] }),
      yamlOf('ReservedAddress', 'web-addr', { region: 'us' }),
    );
    const addr = String((await waitFor('reservedaddresses', 'web-addr')).status?.addr);
    edgePort = Number(addr.split(':').pop());
    await apply(yamlOf('TCPEdge', 'web-edge', { hostports: [addr], backend: { labels } }));
    await applyObjects(serviceObject('web'), sliceObject('web', servicePort));
    await apply(
      yamlOf('Tunnel', 'web', {
        labels,
        forward: { service: { name: 'web', portName: 'http' }, protocol: 'http' },
        credentialRef: { name: 'web-agent' },
        metadata: 'carried by the operator',
      }),
    );

    const tunnel = await waitFor('tunnels', 'web');
    sessionId = String(tunnel.status?.id);
    expect(sessionId).toMatch(/^ts_/);
    expect(tunnel.status?.sessionIds).toEqual([sessionId]);
    expect(tunnel.status?.forwardTarget).toBe(`http://${hostAddress}:${servicePort}`);
    expect(tunnel.status?.observedGeneration).toBe(tunnel.metadata.generation);
    expect(condition(tunnel, 'Ready')).toMatchObject({ status: 'True', reason: 'Online' });
    expect(condition(tunnel, 'Ready')?.message).toContain(sessionId);

    const credentialId = (await getCr('tunnelcredentials', 'web-agent'))?.status?.id;
    const listed = await h.t.api<{ tunnel_sessions: Record<string, unknown>[] }>('GET', '/tunnel_sessions');
    expect(listed.body.tunnel_sessions.find((session) => session.id === sessionId)).toMatchObject({
      id: sessionId,
      credential: { id: credentialId },
      metadata: 'carried by the operator',
      transport: 'svc/2',
    });
    await waitFor('tcpedges', 'web-edge');
    expect(await curlUntil(edgePort, 'hello from pod-1: GET /path?q=1')).toBeDefined();
  });

  it('follows the EndpointSlice: a new endpoint is dialed by the next connection, in the same session', async () => {
    const nextPort = await startService('pod-2');
    await applyObjects(sliceObject('web', nextPort));
    const moved = await eventually('the Tunnel to forward to the new endpoint', async () => {
      const cr = await getCr('tunnels', 'web');
      return cr?.status?.forwardTarget === `http://${hostAddress}:${nextPort}` ? cr : undefined;
    });
    expect(moved.status?.id).toBe(sessionId);
    expect(await curlUntil(edgePort, 'hello from pod-2: GET /path?q=1')).toBeDefined();

    // No ready endpoint: the agent stops (its session with it) until one is back.
    await applyObjects(sliceObject('web', nextPort, false));
    const waiting = await waitFor('tunnels', 'web', 'False', 'NoReadyEndpoints');
    expect(waiting.status?.id).toBeUndefined();
    await eventually('the session to leave the API', async () =>
      (await sessionIds()).includes(sessionId) ? undefined : true,
    );
    await applyObjects(sliceObject('web', nextPort));
    sessionId = String((await waitFor('tunnels', 'web')).status?.id);
    expect(await curlUntil(edgePort, 'hello from pod-2: GET /path?q=1')).toBeDefined();
  });

  it('stops the agent when the Tunnel is deleted: the session leaves the API', async () => {
    expect(await sessionIds()).toContain(sessionId);
    await h.delete('tunnels', 'web');
    await h.waitGone('tunnels', 'web');
    await eventually('the session to leave the API', async () =>
      (await sessionIds()).includes(sessionId) ? undefined : true,
    );
    const answer = await curl(edgePort);
    expect(answer.stdout).not.toContain('hello from');
  });

  it('waits with TokenUnavailable for a missing TunnelCredential, ServiceNotFound for a missing Service', async () => {
    await apply(
      yamlOf('Tunnel', 'no-credential', {
        labels,
        forward: { url: `tcp://${hostAddress}:1` },
        credentialRef: { name: 'not-there' },
      }),
      yamlOf('Tunnel', 'no-service', {
        labels,
        forward: { service: { name: 'not-there' } },
        credentialRef: { name: 'web-agent' },
      }),
    );
    const noCredential = await waitFor('tunnels', 'no-credential', 'False', 'TokenUnavailable');
    expect(condition(noCredential, 'Ready')?.message).toBe(
      'spec.credentialRef: TunnelCredential not-there does not exist',
    );
    const noService = await waitFor('tunnels', 'no-service', 'False', 'ServiceNotFound');
    expect(condition(noService, 'Ready')?.message).toBe(
      'spec.forward.service: Service not-there does not exist',
    );
    expect(noService.status?.sessionIds).toBeUndefined();
  });

  it('reports the edge refusing the session with its reason, never the token', async () => {
    // The credential may bind only app=web and run=<suffix>: the edge refuses any other label.
    await apply(
      yamlOf('Tunnel', 'refused', {
        labels: { app: 'web', run: 'someone-else' },
        forward: { url: `tcp://${hostAddress}:1` },
        credentialRef: { name: 'web-agent' },
      }),
    );
    const refused = await waitFor('tunnels', 'refused', 'False', 'Refused');
    const message = condition(refused, 'Ready')?.message ?? '';
    expect(message).toContain("the credential's ACL does not allow bind run=someone-else");
    const token = secretValue((await h.getSecret('web-agent-token')) as Secret, 'token');
    expect(token.length).toBeGreaterThan(10);
    expect(message).not.toContain(token);
    expect(refused.status?.sessionIds).toBeUndefined();
  });

  it('restarts the agent on a spec change and on a new token in its Secret: a new session each', async () => {
    const servicePort = await startService('raw-upstream');
    const credential = async () => {
      const response = await h.t.api('POST', '/credentials', { description: `tunnels ${suffix}` });
      expect(response.status).toBe(201);
      return { id: String(response.body.id), token: String(response.body.token) };
    };
    const [first, second] = [await credential(), await credential()];
    const tokenSecret = (token: string) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'raw-token', namespace },
      type: 'Opaque',
      stringData: { authtoken: token },
    });
    const spec = (metadata: string) => ({
      labels: { app: 'raw', run: suffix },
      forward: { url: `tcp://${hostAddress}:${servicePort}` },
      tokenSecretRef: { name: 'raw-token', key: 'authtoken' },
      metadata,
    });
    const session = async (id: string) =>
      (await h.t.api<Record<string, unknown>>('GET', `/tunnel_sessions/${id}`)).body;

    await applyObjects(tokenSecret(first.token));
    await apply(yamlOf('Tunnel', 'raw', spec('one')));
    const one = await waitFor('tunnels', 'raw');
    expect(one.status?.forwardTarget).toBe(`tcp://${hostAddress}:${servicePort}`);
    expect(await session(String(one.status?.id))).toMatchObject({
      credential: { id: first.id },
      metadata: 'one',
    });

    await apply(yamlOf('Tunnel', 'raw', spec('two')));
    const two = await eventually('a new session for the new spec', async () => {
      const cr = await waitFor('tunnels', 'raw');
      return cr.status?.id !== one.status?.id ? cr : undefined;
    });
    expect(await session(String(two.status?.id))).toMatchObject({
      credential: { id: first.id },
      metadata: 'two',
    });

    await applyObjects(tokenSecret(second.token));
    const three = await eventually('a new session for the new token', async () => {
      const cr = await getCr('tunnels', 'raw');
      const online = condition(cr, 'Ready')?.status === 'True';
      return online && cr?.status?.id !== two.status?.id ? cr : undefined;
    });
    expect(await session(String(three.status?.id))).toMatchObject({ credential: { id: second.id } });
    await eventually('the earlier sessions to leave the API', async () => {
      const ids = await sessionIds();
      return ids.includes(String(one.status?.id)) || ids.includes(String(two.status?.id)) ? undefined : true;
    });
  });

  it('ends its sessions when the operator stops (SIGTERM): the process exits, the agents with it', async () => {
    const id = String((await waitFor('tunnels', 'raw')).status?.id);
    expect(await sessionIds()).toContain(id);
    await h.stopOperator('SIGTERM');
    await eventually('the session to leave the API', async () =>
      (await sessionIds()).includes(id) ? undefined : true,
    );
    h.startOperator();
    const back = await eventually('a new session after the restart', async () => {
      const cr = await getCr('tunnels', 'raw');
      return condition(cr, 'Ready')?.status === 'True' && cr?.status?.id !== id ? cr : undefined;
    });
    expect(await sessionIds()).toContain(back.status?.id);
  });

  it.each([
    ['a label name the API refuses', { labels: { 'bad name': 'x' } }, 'label names are 1 to 63'],
    [
      'both a service and a url',
      { forward: { service: { name: 'web' }, url: 'tcp://10.0.0.1:80' } },
      'exactly one of service or url must be set',
    ],
    [
      'a protocol with a url',
      { forward: { url: 'tcp://10.0.0.1:80', protocol: 'tls' } },
      'protocol goes with service',
    ],
    [
      'a port both by number and by name',
      { forward: { service: { name: 'web', port: 80, portName: 'http' } } },
      'port and portName are mutually exclusive',
    ],
    [
      'both a credential and a token Secret',
      { tokenSecretRef: { name: 'raw-token', key: 'authtoken' } },
      'exactly one of credentialRef or tokenSecretRef must be set',
    ],
  ])('refuses %s (CRD rules, before the operator)', async (_what, change, message) => {
    const spec = {
      labels: { app: 'web' },
      forward: { service: { name: 'web' } },
      credentialRef: { name: 'web-agent' },
      ...change,
    };
    const refusal = await kubectl(
      ['apply', '--dry-run=server', '-f', '-'],
      yamlOf('Tunnel', 'invalid', spec),
    ).then(
      () => 'accepted',
      (error: Error) => error.message,
    );
    expect(refusal).toContain(message);
  });

  it('accepts the sample (server-side dry run against the CRDs)', async () => {
    const { stdout } = await kubectl(['apply', '--dry-run=server', '-n', namespace, '-f', SAMPLE]);
    expect(stdout).toContain('tunnel.edgeward.dev/web created (server dry run)');
  });
});
