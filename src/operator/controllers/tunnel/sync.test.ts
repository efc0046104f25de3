import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FakeInformer } from '../../../../test/support/fake/informer.js';
import { FakeResourceClient } from '../../../../test/support/fake/resource-client.js';
import type { AgentEnd } from '../../../agent/agent.js';
import type { EventReporter } from '../../runtime/events.js';
import { SECRET } from '../../runtime/resource-types.js';
import { StatusWriter } from '../../runtime/status-writer.js';
import { TUNNEL } from '../resource-types.js';
import type { SecretObject } from '../shared/secret-values.js';
import type { TunnelCredentialObject } from '../tunnel-credential/sync.js';
import { type TunnelAgent, TunnelAgents } from './agents.js';
import { reconcileTunnel, type TunnelDeps, type TunnelObject } from './sync.js';
import type { EndpointSliceObject, ServiceObject } from './upstream.js';

/**
 * What one replica does with a Tunnel: every replica runs its agent, only the leader writes, and
 * what it writes covers the sessions of every replica. The e2e test (operator-tunnels-ha) proves
 * it with real processes; this pins the decisions.
 */

class FakeAgent extends EventEmitter {
  readonly done = new Promise<AgentEnd>(() => {});
  start(): void {}
  stop(): void {}
  setForward(): void {}
}

const tunnel: TunnelObject = {
  apiVersion: 'edgeward.dev/v1alpha1',
  kind: 'Tunnel',
  metadata: { name: 'web', namespace: 'ns', uid: 'uid-1', generation: 1, resourceVersion: '1' },
  spec: {
    labels: { app: 'web' },
    forward: { url: 'tcp://10.0.0.1:80' },
    tokenSecretRef: { name: 'token', key: 'authtoken' },
  },
};

const tokenSecret: SecretObject = {
  metadata: { name: 'token', namespace: 'ns' },
  data: { authtoken: Buffer.from('ewt_secret').toString('base64') },
};

function setup(peerSessions: Record<string, string[]> = {}) {
  const client = new FakeResourceClient<TunnelObject>(TUNNEL, [tunnel]);
  const created: FakeAgent[] = [];
  const events: string[] = [];
  const recorder: EventReporter = {
    normal: async (_object, reason) => {
      events.push(reason);
    },
    warning: async (_object, reason) => {
      events.push(reason);
    },
  };
  const deps: TunnelDeps = {
    client,
    tunnels: FakeInformer.following(client),
    credentials: new FakeInformer<TunnelCredentialObject>(),
    secrets: new FakeInformer<SecretObject>([tokenSecret]),
    secretClient: new FakeResourceClient<SecretObject>(SECRET),
    services: new FakeInformer<ServiceObject>(),
    slices: new FakeInformer<EndpointSliceObject>(),
    statusWriter: new StatusWriter(),
    events: recorder,
    agents: new TunnelAgents({
      agentVersion: '9.9.9',
      mayRun: () => true,
      onChange: () => {},
      createAgent: () => {
        const agent = new FakeAgent();
        created.push(agent);
        return agent as unknown as TunnelAgent;
      },
    }),
    edge: { addr: 'edge.example:4443' },
    peers: { peerValues: (key) => peerSessions[key] ?? [] },
  };
  const request = { key: 'ns/web', namespace: 'ns', name: 'web' };
  const writes = () => client.requests.filter((r) => r.verb !== 'get');
  const status = () => client.stored('ns', 'web')?.status;
  return { deps, request, created, events, writes, status };
}

describe('reconcileTunnel across replicas', () => {
  it('runs the agent in a replica that does not lead, and writes nothing there', async () => {
    const { deps, request, created, events, writes } = setup({ 'ns/web': ['ts_peer'] });
    await reconcileTunnel(deps, request, false);
    expect(created).toHaveLength(1);
    created[0]?.emit('session', 'ts_mine');
    await reconcileTunnel(deps, request, false);
    expect(writes()).toEqual([]);
    expect(events).toEqual([]);
  });

  it('as the leader, lists every replica’s sessions oldest first, and is Online through a peer alone', async () => {
    const peers = { 'ns/web': ['ts_2peer'] };
    const { deps, request, created, events, status } = setup(peers);
    await reconcileTunnel(deps, request, true);
    // This replica's agent is still dialing; the other replica's session carries the Tunnel.
    expect(status()).toMatchObject({ id: 'ts_2peer', sessionIds: ['ts_2peer'] });
    expect(status()?.conditions?.[0]).toMatchObject({ status: 'True', reason: 'Online' });

    created[0]?.emit('session', 'ts_1mine');
    await reconcileTunnel(deps, request, true);
    expect(status()).toMatchObject({ id: 'ts_1mine', sessionIds: ['ts_1mine', 'ts_2peer'] });
    expect(status()?.conditions?.[0]?.message).toBe(
      'sessions ts_1mine, ts_2peer online at edge.example:4443, carrying to tcp://10.0.0.1:80',
    );

    // The peer's report goes (stopped, or stale): its session leaves status.
    peers['ns/web'] = [];
    await reconcileTunnel(deps, request, true);
    expect(status()).toMatchObject({ id: 'ts_1mine', sessionIds: ['ts_1mine'] });
    expect(events).toEqual(['SessionOnline', 'SessionOnline']);
  });

  it('says Connecting, without session ids, when no replica holds a session', async () => {
    const { deps, request, status } = setup();
    await reconcileTunnel(deps, request, true);
    expect(status()?.sessionIds).toBeUndefined();
    expect(status()?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'Connecting' });
  });

  it('reports what blocks the Tunnel even while a peer still lists a session', async () => {
    const { deps, request, created, status } = setup({ 'ns/web': ['ts_peer'] });
    (deps.secrets as FakeInformer<SecretObject>).remove('ns', 'token');
    await reconcileTunnel(deps, request, true);
    expect(created).toEqual([]);
    expect(status()?.sessionIds).toBeUndefined();
    expect(status()?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'TokenUnavailable' });
  });
});
