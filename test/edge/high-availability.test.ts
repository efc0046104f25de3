import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sshTunnelArgs } from '../support/admin-api.js';
import { until as waitUntil } from '../support/eventually.js';
import { HaCluster } from '../support/ha-cluster.js';
import { haproxyMissing } from '../support/haproxy.js';
import { curlHttps } from '../support/https-curl.js';
import { OpenSshWorkspace } from '../support/openssh.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * Several edges behind one address, as a production layout runs them: `edgeward server` (SQLite),
 * three `edgeward edge` processes, HAProxy (Debian's) in front of their tunnel, TLS and SSH ports,
 * our agent as processes holding a session on every edge, the unmodified OpenSSH client holding
 * one session on one edge, and curl as the public client. Faults are real: SIGKILL of an edge, and
 * a rolling restart (SIGTERM, drain, a new process) of every edge while requests flow.
 */
const HOST = 'ha.example.test';
const EDGES = 3;
const RELAYED = 'edgeward_edge_relayed_connections_total{outcome="carried"}';

let cluster: HaCluster;
let ssh: OpenSshWorkspace;
const sshClients: ChildProcess[] = [];

function until<T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 20_000) {
  return waitUntil(what, probe, ok, { timeoutMs, intervalMs: 200 });
}

describeUnless(haproxyMissing, 'several edges behind HAProxy', () => {
  let agentCredential: Record<string, unknown>;
  const agentSessions = () => cluster.sessionsOf(String(agentCredential.id));

  beforeAll(async () => {
    ssh = new OpenSshWorkspace();
    // HAProxy checks /readyz every 300 ms: two seconds of failing readiness take an edge out of
    // rotation first, even on a loaded machine.
    cluster = await HaCluster.start({
      edges: EDGES,
      adminKey: 'ewk_high_availability_admin_key_0123456789',
      drainDelaySeconds: 2,
      drainTimeoutSeconds: 5,
    });
    agentCredential = await cluster.api('POST', '/credentials', { acl: ['bind:app=*'] });
    await cluster.httpsEdge(HOST, { app: 'web' });
    for (const name of ['one', 'two'])
      cluster.startAgent(
        String(agentCredential.token),
        'app=web',
        `http://127.0.0.1:${await cluster.service(name)}`,
      );
  }, 120_000);

  afterAll(async () => {
    for (const client of sshClients) client.kill('SIGKILL');
    await cluster?.stop();
    ssh?.remove();
  });

  it('each agent holds a session on every edge, and every edge serves the group', async () => {
    const sessions = await until(
      'two agents with a session on each of the three edges',
      agentSessions,
      (list) => list.length === 2 * EDGES,
      30_000,
    );
    expect(new Set(sessions.map((session) => session.id)).size).toBe(2 * EDGES);
    // One session of each agent on each edge, as each edge counts its own.
    for (const edge of cluster.edges)
      expect(await cluster.metric(edge, 'edgeward_edge_tunnel_sessions{transport="svc/2"}')).toBe(2);
    for (let attempt = 0; attempt < 12; attempt++) {
      const outcome = await cluster.request(HOST);
      expect(outcome.ok, outcome.detail).toBe(true);
      expect(['one', 'two']).toContain(outcome.body);
    }
    // Every edge served them from its own sessions: none needed the relay.
    for (const edge of cluster.edges) expect(await cluster.metric(edge, RELAYED)).toBe(0);
  }, 60_000);

  it('a session only one edge holds (OpenSSH) is reached through every edge', async () => {
    const key = ssh.keygen('ed25519');
    const credential = await cluster.api('POST', '/ssh_credentials', {
      public_key: key.line,
      acl: ['bind:app=ssh'],
    });
    const host = `ssh.${HOST}`;
    await cluster.httpsEdge(host, { app: 'ssh' });
    const servicePort = await cluster.service('through openssh');
    const client = spawn(
      'ssh',
      sshTunnelArgs({ port: cluster.lb.ssh, keyPath: key.path, forwardPort: servicePort, label: 'app=ssh' }),
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    sshClients.push(client);
    await until(
      'the OpenSSH session listed',
      () => cluster.sessionsOf(String(credential.id)),
      (list) => list.length === 1,
    );
    // Round robin over three edges: nine new connections reach each edge three times; two of the
    // three hold no session of the group and pass the connection to the one that does.
    for (let attempt = 0; attempt < 3 * EDGES; attempt++) {
      const result = await until(
        'a request through the relay',
        () => curlHttps(host, cluster.lb.tls, '/', ['--max-time', '5']),
        (answer) => answer.status !== 0,
      );
      expect(result.status, result.body).toBe(200);
      expect(result.body).toBe('through openssh');
    }
    const relayed = await Promise.all(cluster.edges.map((edge) => cluster.metric(edge, RELAYED)));
    // The edge holding the SSH session carried what the two others passed it (each relayed stream
    // is an upstream connection kept alive for the next request, so one each may be all it took).
    expect(relayed.filter((count) => count > 0)).toHaveLength(1);
    expect(relayed.reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(EDGES - 1);
  }, 60_000);

  it('SIGKILL of one edge: only requests in flight on it fail, and none from 2 s after', async () => {
    let killedAt = 0;
    const stop = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      killedAt = Date.now();
      // A new edge in its place: agents find it without a restart.
      await cluster.replaceEdge(1, 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 3000));
    })();
    const outcomes = await cluster.load(HOST, 3, stop);
    // Failures allowed: requests in flight at the kill (started before it, ended after it).
    const failedBefore = outcomes.filter((outcome) => !outcome.ok && outcome.endedAt < killedAt);
    const failedLate = outcomes.filter((outcome) => !outcome.ok && outcome.startedAt >= killedAt + 2000);
    console.info(
      `[ha] SIGKILL of one edge: ${outcomes.length} requests, ${outcomes.filter((o) => !o.ok).length} failed (${failedLate.length} started 2 s or more after the kill)`,
    );
    expect(failedBefore.map((outcome) => outcome.detail)).toEqual([]);
    expect(failedLate.map((outcome) => outcome.detail)).toEqual([]);
    await until('the agents back on three edges', agentSessions, (list) => list.length === 2 * EDGES, 30_000);
  }, 90_000);

  it('a rolling restart of every edge under load fails no request', async () => {
    const drains: boolean[] = [];
    const stop = (async () => {
      for (let index = 0; index < cluster.edges.length; index++) {
        const { stoppedInMs, drainedInTime } = await cluster.replaceEdge(index, 'SIGTERM');
        console.info(`[ha] edge${index + 1} drained and exited in ${stoppedInMs} ms`);
        // Nothing stays in flight: every request ended, and what the edge carried for the others
        // (edge1 holds the OpenSSH session the others relay to) closed with its relayed streams.
        drains.push(drainedInTime);
        // The agents hold a session on the new edge before the next one goes.
        await until(
          'the agents back on every edge',
          agentSessions,
          (list) => list.length === 2 * EDGES,
          30_000,
        );
      }
    })();
    const outcomes = await cluster.load(HOST, 3, stop);
    const failed = outcomes.filter((outcome) => !outcome.ok);
    console.info(
      `[ha] rolling restart of ${EDGES} edges: ${outcomes.length} requests, ${failed.length} failed`,
    );
    expect(outcomes.length).toBeGreaterThan(30);
    expect(failed.map((outcome) => outcome.detail)).toEqual([]);
    expect(drains).toEqual(Array(EDGES).fill(true));
  }, 240_000);
});
