import tls from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TUNNEL_ALPN_V2 } from '../../src/schemas/tunnel-protocol.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { MountedSecret } from '../support/mounted-secret.js';
import { OpensslWorkspace } from '../support/openssl.js';
import { condition, OperatorHarness } from '../support/operator-harness.js';

/**
 * `edgeward operator --edge-ca` is followed as Kubernetes updates the Secret it is mounted from (a
 * new folder, then a swap of the `..data` symlink: MountedSecret): a real server, an in-process
 * edge fed by it, and the operator as a process whose `--edge-ca` points into such a folder. Two
 * Tunnels hold a session each. The edge's tunnel certificate is then rotated to one signed by a new
 * CA and the Secret swapped to that CA alone: the agent told to reconnect gets a new session (its
 * dial trusted the new CA, the old one no longer verifies the edge), while the other keeps its
 * session through a reconcile (the CA is read at each dial, not part of what restarts an agent).
 * Contents that are no CA are refused with a warning, and the CA in force stays in use.
 */

const h = new OperatorHarness('edge-ca');
const { apply, yamlOf, getCr, eventually, waitFor, kubectl, namespace, suffix } = h;

let edge: TestEdge | undefined;
let secret: MountedSecret | undefined;
let ssl: OpensslWorkspace;

beforeAll(async () => {
  ssl = new OpensslWorkspace();
  await h.start({
    operatorArgs: async (server) => {
      edge = await startTestEdge(server);
      secret = new MountedSecret({ 'ca.crt': edge.tunnelCa });
      return [
        '--edge-addr',
        edge.tunnelAddr,
        '--edge-ca',
        secret.path('ca.crt'),
        '--edge-server-name',
        'localhost',
      ];
    },
  });
});

afterAll(async () => {
  await edge?.stop();
  await h.stop();
  secret?.remove();
  ssl?.cleanup();
});

/** Whether a TLS handshake with the edge's tunnel endpoint trusting `ca` succeeds, or its error code. */
function handshake(ca: string): Promise<string> {
  const [host, port] = (edge?.tunnelAddr ?? '').split(':');
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port: Number(port),
      servername: 'localhost',
      ca,
      ALPNProtocols: [TUNNEL_ALPN_V2],
    });
    socket.once('secureConnect', () => {
      socket.destroy();
      resolve('verified');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

const onlineId = async (name: string): Promise<string | undefined> => {
  const cr = await getCr('tunnels', name);
  return condition(cr, 'Ready')?.status === 'True' ? cr?.status?.id : undefined;
};

/** The restart command: the operator's agent closes its session and dials again at once. */
async function restart(sessionId: string): Promise<void> {
  expect((await h.t.api('POST', `/tunnel_sessions/${sessionId}/restart`)).status).toBe(204);
}

/** A new session of the Tunnel, other than `before`. */
const newSession = (name: string, before: string) =>
  eventually(`a new session of Tunnel ${name}`, async () => {
    const id = await onlineId(name);
    return id !== undefined && id !== before ? id : undefined;
  });

it('follows its --edge-ca Secret: a reconnecting agent trusts the new CA, running agents keep their sessions', async () => {
  const credential = await h.t.api('POST', '/credentials', { description: `edge-ca ${suffix}` });
  expect(credential.status).toBe(201);
  const token = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'agent-token', namespace },
    type: 'Opaque',
    stringData: { authtoken: String(credential.body.token) },
  });
  const spec = (app: string) => ({
    labels: { app, run: suffix },
    forward: { url: 'tcp://127.0.0.1:9' },
    tokenSecretRef: { name: 'agent-token', key: 'authtoken' },
  });
  await apply(token, yamlOf('Tunnel', 'kept', spec('kept')), yamlOf('Tunnel', 'redialed', spec('redialed')));
  const kept = String((await waitFor('tunnels', 'kept')).status?.id);
  const redialed = String((await waitFor('tunnels', 'redialed')).status?.id);
  expect(kept).toMatch(/^ts_/);
  expect(redialed).toMatch(/^ts_/);

  // A new tunnel certificate, signed by a new CA, served from the next handshake on; the sessions
  // up keep theirs. Then the Secret holds that CA alone, as after a CA rotation.
  const rotated = ssl.caAndLeaf('localhost', 'rotated tunnel CA');
  edge?.edge.setTunnelCertificate({ cert: rotated.leaf.pem, key: rotated.leaf.key.pem });
  expect(await handshake(rotated.ca.pem)).toBe('verified');
  expect(await handshake(edge?.tunnelCa ?? '')).not.toBe('verified');
  secret?.update({ 'ca.crt': rotated.ca.pem });

  // The agent that reconnects gets a session only by trusting the new CA.
  await restart(redialed);
  const second = await newSession('redialed', redialed);

  // The other agent was not restarted for the new CA: a reconcile of its Tunnel (a label poke)
  // keeps its session, the one the API still lists.
  await h.settled();
  const reconciles = await h.metricSum('edgeward_operator_reconcile_total', { kind: 'Tunnel' });
  await kubectl(['label', '-n', namespace, 'tunnels.edgeward.dev', 'kept', 'poke=after-ca-swap']);
  await eventually('a reconcile of Tunnel kept', async () =>
    (await h.metricSum('edgeward_operator_reconcile_total', { kind: 'Tunnel' })) > reconciles
      ? true
      : undefined,
  );
  await h.settled();
  const keptNow = await getCr('tunnels', 'kept');
  expect(keptNow?.status?.sessionIds).toEqual([kept]);
  const listed = await h.t.api<{ tunnel_sessions: { id: string }[] }>('GET', '/tunnel_sessions');
  expect(listed.body.tunnel_sessions.map((session) => session.id)).toEqual(
    expect.arrayContaining([kept, second]),
  );

  // Contents that are no CA: refused with a warning, and the CA in force still trusted at the next dial.
  secret?.update({ 'ca.crt': 'not a certificate' });
  await eventually('the operator to refuse the new contents', async () =>
    h.operatorOutput.includes('kept the current edge CA') ? true : undefined,
  );
  expect(h.operatorOutput).toContain('holds no PEM certificate');
  await restart(second);
  await newSession('redialed', second);
  expect(await onlineId('kept')).toBe(kept);
});
