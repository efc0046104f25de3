import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  endpointAddress,
  endpointSkipReason,
  endpointSliceManifest,
  serviceManifest,
} from '../support/cluster-services.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { type Cr, condition, FIRST_REPLICA, OperatorHarness } from '../support/operator-harness.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * Tunnels survive the loss of an operator replica. Two `edgeward operator` processes with leader
 * election on one Lease (short timings: 4 s lease, 3 s renew deadline, 1 s retry), a real server
 * and edge, one Tunnel to a Service whose "pod" is an HTTP server of this process (the endpoint
 * address of cluster-services.ts), and a TCPEdge on its tunnel group. Every replica runs the
 * Tunnel's agent, so the edge holds one session per replica; the leader alone writes status,
 * listing every replica's session (the others report theirs on Leases of their own).
 *
 * Requests go through the edge one after the other, each on a new connection, for the whole test.
 * The leader is SIGKILLed between two of them: a connection the dying process carried at that
 * instant would die with it (its bytes were in that process), which no operator can prevent; what
 * high availability promises, and this asserts, is that no request after it fails: the edge opens
 * the next ones on the surviving replica's session. The survivor takes the Lease and, once the dead
 * replica's report goes stale, status lists its session alone. The times are printed, not asserted.
 */

const h = new OperatorHarness('tunnels-ha');
const { apply, yamlOf, getCr, eventually, waitFor, kubectl, namespace, suffix } = h;
const LEASE = 'ha-operator';
const ELECTION = [
  '--leader-elect',
  '--leader-election-namespace',
  namespace,
  '--leader-election-id',
  LEASE,
  '--leader-elect-lease-duration',
  '4s',
  '--leader-elect-renew-deadline',
  '3s',
  '--leader-elect-retry-period',
  '1s',
];
const ANSWER = 'hello from ha-pod: GET /ha';

let edge: TestEdge | undefined;
let scratch: string;
let service: Server | undefined;
let edgePort = 0;

/** One request on a new connection through the edge's TCP port; resolves with the body of a 200. */
function request(): Promise<string> {
  return new Promise((resolve, reject) => {
    const sent = get(
      { host: '127.0.0.1', port: edgePort, path: '/ha', agent: false, timeout: 5000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('error', reject);
        res.on('end', () =>
          res.statusCode === 200 ? resolve(body) : reject(new Error(`HTTP ${res.statusCode}: ${body}`)),
        );
      },
    );
    sent.on('timeout', () => sent.destroy(new Error('no answer within 5 s')));
    sent.on('error', reject);
  });
}

/** Requests one after the other until stopped; `between` runs something between two of them. */
class RequestLoop {
  ok = 0;
  readonly failures: string[] = [];
  readonly #started = Date.now();
  #stopped = false;
  #next: (() => void) | undefined;
  readonly #done: Promise<void>;

  constructor() {
    this.#done = this.#run();
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const next = this.#next;
      this.#next = undefined;
      next?.();
      try {
        const body = await request();
        if (body === ANSWER) this.ok++;
        else this.failures.push(`${Date.now() - this.#started} ms: answered '${body}'`);
      } catch (error) {
        this.failures.push(`${Date.now() - this.#started} ms: ${(error as Error).message}`);
      }
    }
  }

  /** Runs `action` after the request in flight ends and before the next one starts. */
  between(action: () => void): Promise<void> {
    return new Promise((resolve) => {
      this.#next = () => {
        action();
        resolve();
      };
    });
  }

  /** Waits until `count` more requests have succeeded. */
  async more(count: number): Promise<void> {
    const target = this.ok + count;
    await eventually(`${count} more requests through the edge`, async () => this.ok >= target || undefined);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#done;
  }
}

const leading = async (replica: string): Promise<boolean> =>
  (await h.metricSum('edgeward_operator_leader', {}, replica).catch(() => 0)) === 1;

const listedSessions = async (): Promise<Set<string>> => {
  const response = await h.t.api<{ tunnel_sessions: { id: string }[] }>('GET', '/tunnel_sessions');
  expect(response.status).toBe(200);
  return new Set(response.body.tunnel_sessions.map((session) => session.id));
};

const sessionIdsOf = (cr: Cr | undefined) => (cr?.status?.sessionIds ?? []) as string[];

/** The Tunnel once Ready (for its generation) with exactly `count` sessions in status. */
const withSessions = (count: number) =>
  eventually(`tunnels/web Online with ${count} session(s)`, async () => {
    const cr = await getCr('tunnels', 'web');
    const ready = condition(cr, 'Ready');
    const online = ready?.status === 'True' && ready.observedGeneration === cr?.metadata.generation;
    return online && sessionIdsOf(cr).length === count ? cr : undefined;
  });

const reportLeases = async (): Promise<string[]> => {
  const { stdout } = await kubectl([
    'get',
    'leases',
    '-n',
    namespace,
    '-l',
    `edgeward.dev/replica-report-of=${LEASE}`,
    '-o',
    'name',
  ]);
  return stdout.split('\n').filter(Boolean);
};

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'edgeward-tunnels-ha-'));
  await h.start({
    operatorArgs: async (server) => {
      edge = await startTestEdge(server);
      const caFile = join(scratch, 'edge-ca.pem');
      writeFileSync(caFile, edge.tunnelCa);
      return [
        '--edge-addr',
        edge.tunnelAddr,
        '--edge-ca',
        caFile,
        '--edge-server-name',
        'localhost',
        ...ELECTION,
      ];
    },
  });
  await h.addReplica('second');
  h.startOperator([], 'second');
});

afterAll(async () => {
  await h.stop();
  await edge?.stop();
  service?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describeUnless(endpointSkipReason(), 'Tunnel: every operator replica carries it', () => {
  let survivor = '';
  let survivorSession = '';

  it('keeps every request flowing when the leader is SIGKILLed, and status ends with the survivor alone', async () => {
    const hostAddress = endpointAddress();
    service = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`hello from ha-pod: ${req.method} ${req.url}`);
    });
    service.listen(0, hostAddress);
    await once(service, 'listening');
    const servicePort = (service.address() as AddressInfo).port;
    const labels = { app: 'ha', run: suffix };
    await apply(
      yamlOf('TunnelCredential', 'ha-agent', { acl: ['bind:app=ha', `bind:run=${suffix}`] }),
      yamlOf('ReservedAddress', 'ha-addr', { region: 'us' }),
    );
    const addr = String((await waitFor('reservedaddresses', 'ha-addr')).status?.addr);
    edgePort = Number(addr.split(':').pop());
    await apply(yamlOf('TCPEdge', 'ha-edge', { hostports: [addr], backend: { labels } }));
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          serviceManifest(namespace, 'web'),
          endpointSliceManifest(namespace, 'web', hostAddress, servicePort),
        ],
      }),
    );
    await apply(
      yamlOf('Tunnel', 'web', {
        labels,
        forward: { service: { name: 'web', portName: 'http' } },
        credentialRef: { name: 'ha-agent' },
        metadata: 'carried by every replica',
      }),
    );

    // One session per replica, both in status (written by the leader alone) and in the API.
    const both = await withSessions(2);
    const sessions = sessionIdsOf(both);
    expect(new Set(sessions).size).toBe(2);
    expect(both.status?.id).toBe(sessions[0]);
    expect(condition(both, 'Ready')?.message).toContain(`sessions ${sessions.join(', ')} online`);
    const credentialId = (await getCr('tunnelcredentials', 'ha-agent'))?.status?.id;
    const listed = await h.t.api<{ tunnel_sessions: Record<string, unknown>[] }>('GET', '/tunnel_sessions');
    for (const id of sessions) {
      expect(listed.body.tunnel_sessions.find((session) => session.id === id)).toMatchObject({
        credential: { id: credentialId },
        metadata: 'carried by every replica',
      });
    }
    const leader = await eventually('one leader', async () => {
      const [first, second] = [await leading(FIRST_REPLICA), await leading('second')];
      return first !== second ? (first ? FIRST_REPLICA : 'second') : undefined;
    });
    survivor = leader === FIRST_REPLICA ? 'second' : FIRST_REPLICA;
    // The standby reconciles Tunnels only: nothing else, and no call to the edgeward API.
    expect(
      await h.metricSum('edgeward_operator_reconcile_total', { kind: 'Tunnel' }, survivor),
    ).toBeGreaterThan(0);
    for (const kind of ['TCPEdge', 'TunnelCredential', 'ReservedAddress']) {
      expect(await h.metricSum('edgeward_operator_reconcile_total', { kind }, survivor)).toBe(0);
    }
    expect(await h.metricSum('edgeward_operator_api_requests_total', { api: 'edgeward' }, survivor)).toBe(0);
    // Each replica with sessions reports them on a Lease of its own.
    await eventually('a report Lease per replica', async () =>
      (await reportLeases()).length === 2 ? true : undefined,
    );

    await waitFor('tcpedges', 'ha-edge');
    await eventually('the edge to carry a first request', async () =>
      (await request().catch(() => undefined)) === ANSWER ? true : undefined,
    );
    const loop = new RequestLoop();
    try {
      await loop.more(50);
      let killedAt = 0;
      await loop.between(() => {
        killedAt = Date.now();
        // A kill without a word: no reconcile drained, no agent stopped, no Lease released.
        void h.stopOperator('SIGKILL', leader);
      });
      const gone = await eventually('the dead replica’s session to leave the API', async () => {
        const now = await listedSessions();
        const left = sessions.filter((id) => now.has(id));
        return left.length === 1 ? { at: Date.now(), left: left[0] as string } : undefined;
      });
      survivorSession = gone.left;
      const leadingAt = await eventually('the survivor to lead', async () =>
        (await leading(survivor)) ? Date.now() : undefined,
      );
      const converged = await eventually('status to list the survivor’s session alone', async () => {
        const cr = await getCr('tunnels', 'web');
        const ids = sessionIdsOf(cr);
        const ready = condition(cr, 'Ready')?.status === 'True';
        return ready && ids.length === 1 && ids[0] === survivorSession ? Date.now() : undefined;
      });
      await loop.more(50);
      await loop.stop();
      expect(loop.failures).toEqual([]);
      process.stderr.write(
        `[tunnels-ha] SIGKILL of the leader, ${loop.ok} requests, ${loop.failures.length} failed; ` +
          `the edge dropped its session after ${gone.at - killedAt} ms, the survivor led after ` +
          `${leadingAt - killedAt} ms, status converged after ${converged - killedAt} ms\n`,
      );
    } finally {
      await loop.stop();
    }
    const final = await getCr('tunnels', 'web');
    expect(final?.status?.id).toBe(survivorSession);
    expect(condition(final, 'Ready')?.message).toContain(`session ${survivorSession} online`);
    // The leader deletes the dead replica's stale report.
    await eventually('one report Lease left', async () =>
      (await reportLeases()).length === 1 ? true : undefined,
    );
  });

  it('a replica stopped by SIGTERM ends its sessions and deletes its report: status drops it at once', async () => {
    await h.addReplica('third');
    h.startOperator([], 'third');
    const both = await withSessions(2);
    const added = sessionIdsOf(both).find((id) => id !== survivorSession) as string;
    expect(sessionIdsOf(both)).toContain(survivorSession);
    expect(await reportLeases()).toHaveLength(2);

    const stoppedAt = Date.now();
    await h.stopOperator('SIGTERM', 'third');
    const exitedAt = Date.now();
    // Deleted before the process exited.
    expect(await reportLeases()).toHaveLength(1);
    await eventually('the stopped replica’s session to leave the API', async () =>
      (await listedSessions()).has(added) ? undefined : true,
    );
    const converged = await eventually('status to drop the stopped replica’s session', async () => {
      const ids = sessionIdsOf(await getCr('tunnels', 'web'));
      return ids.length === 1 && ids[0] === survivorSession ? Date.now() : undefined;
    });
    expect(await leading(survivor)).toBe(true);
    process.stderr.write(
      `[tunnels-ha] SIGTERM of a standby: exited after ${exitedAt - stoppedAt} ms, ` +
        `status converged after ${converged - stoppedAt} ms\n`,
    );
  });
});
