import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type Server as HttpServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent as UndiciAgent, request as undiciRequest } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { livenessBounds } from '../../src/edge/routing/session-liveness.js';
import { agentArgs, type CliProcess, spawnCli } from '../support/cli-process.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { waitFor } from '../support/eventually.js';
import { namedService } from '../support/loopback-server.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Liveness and failover of tunnel sessions with real agent processes: `edgeward agent` started as
 * an OS process, killed with SIGKILL or frozen with SIGSTOP (a laptop lid, a dead NAT), while
 * clients keep using the HTTPS and TCP edges of the agents' tunnel group.
 */

/** The edge's liveness, shortened for the test (the defaults' bounds are proven in session-liveness.test.ts). */
const LIVENESS = { intervalMs: 1_000, overdueMs: 1_000, timeoutMs: 3_000 };
const BOUNDS = livenessBounds(LIVENESS);
/** What a loaded machine adds to timers and to the control plane's list. */
const SLACK_MS = 3_000;

let t: TestServer;
let edge: TestEdge;
let workDir: string;
let tunnelCaFile: string;
const services: HttpServer[] = [];
const processes: CliProcess[] = [];

beforeAll(async () => {
  t = await startTestServer();
  edge = await startTestEdge(t, { tls: true, sessionLiveness: LIVENESS });
  workDir = mkdtempSync(join(tmpdir(), 'edgeward-liveness-'));
  tunnelCaFile = join(workDir, 'tunnel-ca.crt');
  writeFileSync(tunnelCaFile, edge.tunnelCa);
});

afterAll(async () => {
  for (const child of processes.splice(0)) {
    child.child.kill('SIGCONT');
    await child.kill('SIGKILL');
  }
  for (const service of services) service.close();
  await edge?.stop();
  await t?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

async function create(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await t.api('POST', path, body);
  expect(response.status, `${path}: ${response.text}`).toBe(201);
  return response.body;
}

const localService = (name: string) => namedService(name, services);

/** `edgeward agent` as a process, carrying the tunnel group `group` to the service on `servicePort`. */
function startAgent(token: string, group: string, servicePort: number): CliProcess {
  const agent = spawnCli(
    agentArgs({
      edgeAddr: edge.tunnelAddr,
      edgeCa: tunnelCaFile,
      label: `group=${group}`,
      forward: `http://127.0.0.1:${servicePort}`,
      extra: ['--no-exec-restart'],
    }),
    { EDGEWARD_AUTHTOKEN: token },
  );
  processes.push(agent);
  return agent;
}

async function sessionOpened(agent: CliProcess, notId?: unknown): Promise<string> {
  const line = await agent.logLine((entry) => entry.msg === 'session opened' && entry.sessionId !== notId);
  return String(line.sessionId);
}

async function listedSessionIds(): Promise<string[]> {
  const listed = await t.api<{ tunnel_sessions: Array<{ id: string }> }>('GET', '/tunnel_sessions');
  return listed.body.tunnel_sessions.map((session) => session.id);
}

/** A tunnel group with an HTTPS edge (host `group`) and a TCP edge in front of it, and a credential. */
async function tunnelGroup(group: string) {
  const credential = await create('/credentials', {});
  const backend = await create('/backends/tunnel_group', { labels: { group } });
  const httpsEdge = await create('/edges/https', { hostports: [`${group}:443`] });
  await create(`/edges/https/${httpsEdge.id}/routes`, {
    match_type: 'path_prefix',
    match: '/',
    backend: { backend_id: backend.id },
  });
  const addr = await create('/reserved_addrs', { region: 'us' });
  await create('/edges/tcp', { hostports: [addr.addr], backend: { backend_id: backend.id } });
  return { token: String(credential.token), tcpPort: Number(String(addr.addr).split(':').pop()) };
}

interface Outcome {
  ok: boolean;
  /** The service's name, or why the request failed. */
  answer: string;
  startedAt: number;
  ms: number;
}

/** Public clients of one tunnel group: HTTPS requests over kept-alive connections, and TCP connections. */
class Clients {
  readonly #https: UndiciAgent;

  constructor(
    private readonly host: string,
    private readonly tcpPort: number,
  ) {
    this.#https = new UndiciAgent({
      connect: { rejectUnauthorized: false, servername: host },
      connections: 8,
    });
  }

  /** One GET through the HTTPS edge. */
  async https(timeoutMs = 10_000): Promise<Outcome> {
    const started = Date.now();
    try {
      const response = await undiciRequest(`https://127.0.0.1:${edge.edge.tlsPort}/`, {
        dispatcher: this.#https,
        headers: { host: `${this.host}:${edge.edge.tlsPort}` },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const body = await response.body.text();
      const ok = response.statusCode === 200;
      return {
        ok,
        answer: ok ? body : `${response.statusCode} ${response.headers['edgeward-error']}`,
        startedAt: started,
        ms: Date.now() - started,
      };
    } catch (error) {
      return {
        ok: false,
        answer: error instanceof Error ? error.message : String(error),
        startedAt: started,
        ms: Date.now() - started,
      };
    }
  }

  /** One GET over a new TCP connection through the TCP edge. */
  tcp(timeoutMs = 10_000): Promise<Outcome> {
    const started = Date.now();
    return new Promise((resolve) => {
      const settle = (ok: boolean, answer: string) =>
        resolve({ ok, answer, startedAt: started, ms: Date.now() - started });
      const request = httpRequest(
        { host: '127.0.0.1', port: this.tcpPort, path: '/', agent: false, timeout: timeoutMs },
        (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            body += chunk;
          });
          response.once('end', () => settle(response.statusCode === 200, body));
          response.once('error', (error) => settle(false, error.message));
        },
      );
      request.once('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.once('error', (error) => settle(false, error.message));
      request.end();
    });
  }

  close(): Promise<void> {
    return this.#https.close();
  }
}

/**
 * Runs `request` in `concurrency` loops until `stop` resolves; every outcome is recorded. A short
 * pause between requests leaves the CPU to the agents' start (two cores).
 */
async function keepRequesting(
  concurrency: number,
  request: () => Promise<Outcome>,
  stop: Promise<unknown>,
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let stopped = false;
  void stop.finally(() => {
    stopped = true;
  });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!stopped) {
        outcomes.push(await request());
        await sleep(5);
      }
    }),
  );
  return outcomes;
}

describe('failover inside a tunnel group', () => {
  it('SIGKILL of one agent of two, 10 times: no HTTPS request fails, no TCP connection opened since fails', async () => {
    const group = 'failover.liveness.test';
    const { token, tcpPort } = await tunnelGroup(group);
    let serving = startAgent(token, group, await localService('first'));
    await sessionOpened(serving);
    const clients = new Clients(group, tcpPort);
    // The edge binds the TCP edge when its feed brings it; on a busy CI machine that took over 10 s.
    let last: Outcome[] = [];
    await waitFor(
      async () => {
        last = await Promise.all([clients.https(5_000), clients.tcp(5_000)]);
        return last.every((outcome) => outcome.ok);
      },
      {
        what: 'the HTTPS and TCP edges serving',
        timeoutMs: 30_000,
        intervalMs: 100,
        detail: () => `last outcomes: ${JSON.stringify(last)}`,
      },
    );

    let finish!: () => void;
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const httpsOutcomes = keepRequesting(3, () => clients.https(), finished);
    const tcpOutcomes = keepRequesting(1, () => clients.tcp(), finished);
    // The agent killed each time is the older of the two, whose session holds most of the edge's
    // kept-alive upstream connections; a new agent joins the group first, and takes its share.
    /** When each kill was sent, and when the process was seen gone. */
    const kills: Array<{ sentAt: number; goneAt: number }> = [];
    try {
      for (let kill = 0; kill < 10; kill++) {
        const replacement = startAgent(token, group, await localService(`agent ${kill}`));
        await sessionOpened(replacement);
        await sleep(300);
        const sentAt = Date.now();
        await serving.kill('SIGKILL');
        kills.push({ sentAt, goneAt: Date.now() });
        serving = replacement;
      }
      await sleep(300);
    } finally {
      finish();
    }
    const https = await httpsOutcomes;
    const tcp = await tcpOutcomes;
    await clients.close();
    const httpsFailed = https.filter((outcome) => !outcome.ok);
    const tcpFailed = tcp.filter((outcome) => !outcome.ok);
    console.log(
      `failover: ${kills.length} kills; ${https.length} HTTPS requests, ${httpsFailed.length} failed; ` +
        `${tcp.length} TCP connections, ${tcpFailed.length} cut by a kill while carried`,
    );
    expect(kills).toHaveLength(10);
    // Every agent took its share before it was killed.
    const answers = new Set([...https, ...tcp].map((outcome) => outcome.answer));
    for (let kill = 0; kill < 9; kill++) expect(answers).toContain(`agent ${kill}`);
    // An HTTPS GET that the killed agent did not answer is sent again, to the other agent.
    expect(httpsFailed).toEqual([]);
    // A TCP connection's bytes cannot be sent again: one the killed agent was carrying at that
    // moment is lost with it. Every other one, opened before or after, is carried.
    const spansKill = (outcome: Outcome) =>
      kills.some(
        ({ sentAt, goneAt }) => outcome.startedAt <= goneAt && sentAt <= outcome.startedAt + outcome.ms,
      );
    expect(
      tcpFailed.filter((outcome) => !spansKill(outcome)),
      JSON.stringify(kills),
    ).toEqual([]);
    expect(tcpFailed.length).toBeLessThanOrEqual(kills.length);
  }, 120_000);
});

describe('a frozen agent', () => {
  it('SIGSTOP: out of rotation within the bound, no request fails or hangs, its session is closed; SIGCONT: it reconnects', async () => {
    const group = 'frozen.liveness.test';
    const { token, tcpPort } = await tunnelGroup(group);
    const frozen = startAgent(token, group, await localService('frozen'));
    const frozenSessionId = await sessionOpened(frozen);
    const steady = startAgent(token, group, await localService('steady'));
    await sessionOpened(steady);
    const clients = new Clients(group, tcpPort);
    // Both carry requests (and the edge keeps upstream connections on both).
    const seen = new Set<string>();
    await waitFor(
      async () => {
        const outcomes = await Promise.all([
          ...Array.from({ length: 4 }, () => clients.https()),
          ...Array.from({ length: 2 }, () => clients.tcp()),
        ]);
        for (const outcome of outcomes) if (outcome.ok) seen.add(outcome.answer);
        return seen.has('frozen') && seen.has('steady');
      },
      { what: 'both agents carrying requests', timeoutMs: 10_000, intervalMs: 50 },
    );

    frozen.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    // From the moment of the freeze: every request succeeds. A connection waiting on the frozen
    // agent moves on when it leaves rotation; a GET sent on a kept-alive connection of it is sent
    // again once its session is closed.
    const meanwhile = await Promise.all([
      ...Array.from({ length: 6 }, () => clients.https()),
      ...Array.from({ length: 4 }, () => clients.tcp()),
    ]);
    expect(meanwhile.filter((outcome) => !outcome.ok)).toEqual([]);
    for (const outcome of meanwhile) expect(outcome.ms).toBeLessThan(BOUNDS.closedMs + SLACK_MS);

    // Once out of rotation, every new request goes to the other agent at once.
    await sleep(Math.max(0, stoppedAt + BOUNDS.outOfRotationMs - Date.now()));
    const after: Outcome[] = [];
    for (let round = 0; round < 10; round++) after.push(await clients.https(2_000), await clients.tcp(2_000));
    expect(after.filter((outcome) => !outcome.ok || outcome.answer !== 'steady')).toEqual([]);

    // Closed, so gone from the control plane's list.
    await waitFor(async () => !(await listedSessionIds()).includes(frozenSessionId), {
      what: 'the frozen session gone from GET /tunnel_sessions',
      timeoutMs: BOUNDS.closedMs + SLACK_MS,
      intervalMs: 100,
    });
    expect(Date.now() - stoppedAt).toBeLessThan(BOUNDS.closedMs + SLACK_MS);

    // Thawed, the agent finds its connection closed and opens a new session.
    frozen.child.kill('SIGCONT');
    const reopened = await sessionOpened(frozen, frozenSessionId);
    expect(reopened).not.toBe(frozenSessionId);
    await waitFor(async () => (await listedSessionIds()).includes(reopened), {
      what: 'the new session listed',
      timeoutMs: 5_000,
      intervalMs: 100,
    });
    await clients.close();
  }, 60_000);
});
