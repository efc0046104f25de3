import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { AgentEnd, AgentOptions } from '../../../agent/agent.js';
import { currentEdgeCa } from '../../../agent/edge-ca.js';
import { type DesiredAgent, type TunnelAgent, TunnelAgents } from './agents.js';

/** The supervisor's decisions (start, keep, replace, retry, stop) over fake agents. */

class FakeAgent extends EventEmitter {
  started = 0;
  stopped = 0;
  #end: (end: AgentEnd) => void = () => {};
  readonly done = new Promise<AgentEnd>((resolve) => {
    this.#end = resolve;
  });
  constructor(readonly options: AgentOptions) {
    super();
  }
  setForward(target: AgentOptions['forward']): void {
    this.options.forward = target;
  }

  start(): void {
    this.started++;
  }
  stop(): void {
    this.stopped++;
    this.#end({ reason: 'stopped' });
  }
  end(end: AgentEnd): void {
    this.#end(end);
  }
}

function setup(running = { value: true }, ca?: AgentOptions['ca']) {
  const created: FakeAgent[] = [];
  const changes: string[] = [];
  const sessionChanges = { count: 0 };
  let now = 1_000_000;
  const agents = new TunnelAgents({
    agentVersion: '9.9.9',
    ca,
    onChange: (key) => changes.push(key),
    onSessionsChange: () => sessionChanges.count++,
    mayRun: () => running.value,
    retryEndedMs: 60_000,
    now: () => now,
    createAgent: (options) => {
      const agent = new FakeAgent(options);
      created.push(agent);
      return agent as unknown as TunnelAgent;
    },
  });
  return { agents, created, changes, sessionChanges, running, advance: (ms: number) => (now += ms) };
}

const desired = (changes: Partial<DesiredAgent> = {}): DesiredAgent => ({
  edgeAddr: 'edge.example:4443',
  authtoken: 'tok_1',
  labels: { app: 'web' },
  forward: { protocol: 'tcp', host: '10.1.0.1', port: 8080 },
  ...changes,
});

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('TunnelAgents', () => {
  it('starts an agent, reports its session, and keeps it when only the forward address moves', () => {
    const { agents, created, changes } = setup();
    expect(agents.ensure('ns/a', desired())).toEqual({ phase: 'connecting', edgeAddr: 'edge.example:4443' });
    expect(created).toHaveLength(1);
    const [agent] = created as [FakeAgent];
    expect(agent.started).toBe(1);
    expect(agent.options.agentVersion).toBe('9.9.9');
    agent.emit('session', 'ts_1');
    expect(changes).toEqual(['ns/a']);
    expect(agents.state('ns/a')).toEqual({
      phase: 'online',
      edgeAddr: 'edge.example:4443',
      sessionIds: ['ts_1'],
    });

    const moved = desired({ forward: { protocol: 'tcp', host: '10.1.0.2', port: 8081 } });
    expect(agents.ensure('ns/a', moved)).toMatchObject({ phase: 'online' });
    expect(created).toHaveLength(1);
    // The agent reads the same object at its next dial.
    expect(agent.options.forward).toEqual({ protocol: 'tcp', host: '10.1.0.2', port: 8081 });
    expect(agents.forwardOf('ns/a')).toEqual({ host: '10.1.0.2', port: 8081 });
  });

  it('replaces the agent when the token, labels or edge change, and ignores the old one after', () => {
    const { agents, created, changes } = setup();
    agents.ensure('ns/a', desired());
    agents.ensure('ns/a', desired({ authtoken: 'tok_2' }));
    agents.ensure('ns/a', desired({ authtoken: 'tok_2', labels: { app: 'api' } }));
    expect(created.map((agent) => agent.stopped)).toEqual([1, 1, 0]);
    created[0]?.emit('session', 'ts_old');
    expect(changes).toEqual([]);
    expect(agents.state('ns/a')?.phase).toBe('connecting');
  });

  it('gives every agent the shared CA to read at each dial: a new CA restarts none', () => {
    let pem = 'PEM of the first CA';
    const { agents, created } = setup({ value: true }, () => pem);
    agents.ensure('ns/a', desired());
    agents.ensure('ns/b', desired({ labels: { app: 'api' } }));
    const [a, b] = created as [FakeAgent, FakeAgent];
    a.emit('session', 'ts_a');
    b.emit('session', 'ts_b');
    expect(typeof a.options.ca).toBe('function');
    pem = 'PEM of the second CA';
    expect(agents.ensure('ns/a', desired())).toMatchObject({ phase: 'online', sessionIds: ['ts_a'] });
    expect(agents.ensure('ns/b', desired({ labels: { app: 'api' } }))).toMatchObject({ phase: 'online' });
    expect(created.map((agent) => agent.stopped)).toEqual([0, 0]);
    // What their next dial trusts (EdgeLink asks the function when it connects).
    for (const agent of created) expect(currentEdgeCa(agent.options.ca)).toBe('PEM of the second CA');
  });

  it('leaves a refused agent ended until the retry time or a new attempt, then dials again', async () => {
    const { agents, created, advance } = setup();
    agents.ensure('ns/a', desired(), '1');
    created[0]?.end({ reason: 'refused', message: 'the credential may not bind app=web' });
    await flush();
    expect(agents.state('ns/a')).toMatchObject({
      phase: 'ended',
      reason: 'Refused',
      message: 'the credential may not bind app=web',
    });
    // The first retry comes soon: a token made a moment ago may not have reached the edge yet.
    expect(agents.retryInMs('ns/a')).toBe(2_000);
    expect(agents.ensure('ns/a', desired(), '1')).toMatchObject({ phase: 'ended' });
    expect(created).toHaveLength(1);
    // The credential changed (a new generation): dialed again at once.
    expect(agents.ensure('ns/a', desired(), '2')).toMatchObject({ phase: 'connecting' });
    expect(created).toHaveLength(2);
    created[1]?.end({ reason: 'stop-command' });
    await flush();
    expect(agents.state('ns/a')).toMatchObject({ phase: 'ended', reason: 'Stopped' });
    // The second ending in a row waits twice as long.
    expect(agents.retryInMs('ns/a')).toBe(4_000);
    advance(4_000);
    expect(agents.retryInMs('ns/a')).toBe(0);
    expect(agents.ensure('ns/a', desired(), '2')).toMatchObject({ phase: 'connecting' });
    expect(created).toHaveLength(3);
  });

  it('backs off from 2 s, doubling up to retryEndedMs, and starts over after a session', async () => {
    const { agents, created, advance } = setup();
    const waits: number[] = [];
    agents.ensure('ns/a', desired());
    for (let ending = 0; ending < 7; ending++) {
      created.at(-1)?.end({ reason: 'refused', message: 'the authtoken is unknown' });
      await flush();
      const wait = agents.retryInMs('ns/a') ?? -1;
      waits.push(wait);
      advance(wait);
      agents.ensure('ns/a', desired());
    }
    expect(waits).toEqual([2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
    created.at(-1)?.emit('session', 'ts_1');
    created.at(-1)?.end({ reason: 'refused', message: 'revoked' });
    await flush();
    expect(agents.retryInMs('ns/a')).toBe(2_000);
  });

  it('tracks every session an agent holds (one per edge), and reports them by key', () => {
    const { agents, created, sessionChanges } = setup();
    agents.ensure('ns/a', desired());
    agents.ensure('ns/b', desired());
    const [a, b] = created as [FakeAgent, FakeAgent];
    a.emit('session', 'ts_1');
    a.emit('session', 'ts_2');
    b.emit('session', 'ts_3');
    expect(agents.sessions()).toEqual({ 'ns/a': ['ts_1', 'ts_2'], 'ns/b': ['ts_3'] });
    expect(sessionChanges.count).toBe(3);
    // One edge's session ends: the agent is still online through the other.
    a.emit('sessionClosed', 'ts_1', 'edge gone');
    expect(agents.state('ns/a')).toMatchObject({ phase: 'online', sessionIds: ['ts_2'] });
    a.emit('sessionClosed', 'ts_2', 'edge gone');
    expect(agents.state('ns/a')).toMatchObject({ phase: 'connecting', lastError: 'edge gone' });
    a.emit('disconnected', 'edge gone', 1000);
    expect(sessionChanges.count).toBe(5);
    // A stopped agent's sessions leave the report too; a connecting one's stop changes nothing.
    agents.stop('ns/b');
    agents.stop('ns/a');
    expect(sessionChanges.count).toBe(6);
    expect(agents.sessions()).toEqual({});
  });

  it('runs nothing while it may not (shutting down), and stops every agent on stopAll', () => {
    const { agents, created, running } = setup();
    agents.ensure('ns/a', desired());
    agents.ensure('ns/b', desired());
    running.value = false;
    expect(agents.ensure('ns/a', desired())).toBeUndefined();
    expect(created[0]?.stopped).toBe(1);
    expect(agents.size).toBe(1);
    agents.stopAll();
    expect(created[1]?.stopped).toBe(1);
    expect(agents.size).toBe(0);
  });
});
