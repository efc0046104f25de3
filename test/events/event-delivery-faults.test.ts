import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DatadogReceiver } from '../support/datadog-receiver.js';
import { eventually } from '../support/eventually.js';
import { OpensslWorkspace } from '../support/openssl.js';
import { projectStore, startTestServer, type TestServer } from '../support/server.js';
import { type ServerProcess, spawnServer } from '../support/server-process.js';

/**
 * Delivery under faults: the server killed (SIGKILL) or stopped (SIGTERM) in the middle of a
 * batch, then started again on the same data (SQLite, the CLI as a separate process); two replicas
 * on one PostgreSQL database sharing the outbox. Duplicates are counted and printed.
 */
const ADMIN = 'ewk_event_delivery_faults_admin_key_0001';
const KEY = 'dd-key-faults-0001';
const REPLICA_KEYS = ['dd-key-replicas-a', 'dd-key-replicas-b', 'dd-key-replicas-c'];

let ssl: OpensslWorkspace;
let receiver: DatadogReceiver;
let caPath: string;
beforeAll(async () => {
  ssl = new OpensslWorkspace();
  const { ca, leaf } = ssl.caAndLeaf('localhost');
  caPath = ca.path;
  receiver = await new DatadogReceiver([KEY, ...REPLICA_KEYS], { cert: leaf.pem, key: leaf.key.pem }).start();
});
afterAll(async () => {
  await receiver?.stop();
  ssl?.cleanup();
});

async function call(baseUrl: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      'svc-version': '2',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** `count` changes (`create(index)`), eight at a time. */
async function createPolicies(count: number, create: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) await create(next++);
    }),
  );
}

function countDuplicates(ids: string[]): number {
  return ids.length - new Set(ids).size;
}

describe('event delivery across a crash (SQLite, the CLI)', () => {
  let dataDir: string;
  let server: ServerProcess | undefined;
  beforeEach((context) => {
    context.skip(
      projectStore() === 'postgres',
      'the CLI crash trials run on SQLite; replicas are tried below',
    );
    dataDir = mkdtempSync(join(tmpdir(), 'edgeward-delivery-faults-'));
    return async () => {
      await server?.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    };
  });
  const start = () =>
    spawnServer(['--data-dir', dataDir, '--datadog-url', receiver.url], {
      EDGEWARD_ADMIN_API_KEY: ADMIN,
      NODE_EXTRA_CA_CERTS: caPath,
    });

  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`${signal} in the middle of a batch: after a restart every event arrives, ${signal === 'SIGKILL' ? 'the batch in flight at most twice' : 'none twice'}`, async () => {
      receiver.received.length = 0;
      receiver.slowMs = 300;
      server = await start();
      const destination = await call(server.listenUrl, 'POST', '/event_destinations', {
        target: { datadog: { api_key: KEY } },
      });
      await call(server.listenUrl, 'POST', '/event_subscriptions', {
        sources: [{ type: 'ip_policy_created.v0' }],
        destination_ids: [destination.id],
      });
      const total = 200;
      const baseUrl = server.listenUrl;
      await createPolicies(total, async (index) => {
        await call(baseUrl, 'POST', '/ip_policies', { description: `f${index}` });
      });
      // Stop it while a batch is on the wire: the intake will accept it, the server never hears so.
      await eventually(
        async () => receiver.inFlight,
        (inFlight) => inFlight > 0,
        10_000,
      );
      const stopping = server;
      await stopping.kill(signal);
      server = await start();
      await eventually(
        async () => new Set(receiver.envelopesFor(KEY).map((envelope) => envelope.event_id)).size,
        (distinct) => distinct === total,
        30_000,
      );
      const status = await call(
        server.listenUrl,
        'GET',
        `/event_destinations/${destination.id}/delivery_status`,
      );
      expect(status).toMatchObject({ backlog: 0, delivered: total });
      const ids = receiver.envelopesFor(KEY).map((envelope) => envelope.event_id);
      const duplicates = countDuplicates(ids);
      const largestBatch = Math.max(...receiver.batches.filter((b) => b.apiKey === KEY).map((b) => b.size));
      console.log(
        `delivery across ${signal}: ${total} events, ${ids.length} received, ${duplicates} duplicates (largest batch ${largestBatch})`,
      );
      if (signal === 'SIGTERM') expect(duplicates).toBe(0);
      else expect(duplicates).toBeLessThanOrEqual(largestBatch);
      // The same delivery id on a repeat: a consumer can drop it.
      const byEvent = new Map<string, Set<string>>();
      for (const envelope of receiver.envelopesFor(KEY)) {
        byEvent.set(envelope.event_id, (byEvent.get(envelope.event_id) ?? new Set()).add(envelope.id));
      }
      for (const deliveryIds of byEvent.values()) expect(deliveryIds.size).toBe(1);
      expect(receiver.violations).toEqual([]);
    }, 90_000);
  }
});

describe('event delivery by two replicas on one PostgreSQL database', () => {
  let t: TestServer | undefined;
  beforeEach((context) => {
    context.skip(projectStore() === 'sqlite', 'replicas share a PostgreSQL database (the postgres project)');
    return async () => t?.stop();
  });

  it('shares the outbox: every destination gets every event once, in routing order', async () => {
    const options = {
      eventDelivery: {
        datadogUrl: receiver.url,
        datadogDispatcher: new Agent({ connect: { ca: readFileSync(caPath, 'utf8') } }),
        pollIntervalMs: 100,
        backoff: { initialMs: 100, maxMs: 400 },
      },
    };
    receiver.slowMs = 20;
    t = await startTestServer(options);
    const replica = await t.startReplica();
    const destinations: string[] = [];
    for (const key of REPLICA_KEYS) {
      const created = await t.api('POST', '/event_destinations', { target: { datadog: { api_key: key } } });
      destinations.push(created.body.id as string);
    }
    await t.api('POST', '/event_subscriptions', {
      sources: [{ type: 'ip_policy_created.v0' }],
      destination_ids: destinations,
    });
    const total = 150;
    // Changes arrive through both replicas, as behind a load balancer.
    const server = t;
    await createPolicies(total, async (index) => {
      const baseUrl = index % 2 === 0 ? server.baseUrl : replica.listenUrl;
      const created = await server.api('POST', `${baseUrl}/ip_policies`, { description: `r${index}` });
      expect(created.status, created.text).toBe(201);
    });
    await eventually(
      async () => REPLICA_KEYS.map((key) => receiver.envelopesFor(key).length),
      (counts) => counts.every((count) => count >= total),
      30_000,
    );
    for (const [index, key] of REPLICA_KEYS.entries()) {
      const ids = receiver.envelopesFor(key).map((envelope) => envelope.event_id);
      expect(countDuplicates(ids), `duplicates at ${key}`).toBe(0);
      const routed = await t.server.app.edgeward.db
        .selectFrom('event_deliveries')
        .select('event_id')
        .where('destination_id', '=', destinations[index] ?? '')
        .orderBy('seq')
        .execute();
      expect(ids).toEqual(routed.map((row) => row.event_id));
    }
    const deliveredBy = async (metricsText: Promise<string>) =>
      [...(await metricsText).matchAll(/^edgeward_events_delivered_total\{[^}]*\} (\d+)$/gm)].reduce(
        (sum, match) => sum + Number(match[1]),
        0,
      );
    const first = await deliveredBy(t.server.app.metrics.metrics());
    const second = await deliveredBy(replica.app.metrics.metrics());
    console.log(`two replicas delivered ${first} + ${second} = ${first + second} of ${3 * total} deliveries`);
    expect(first + second).toBe(3 * total);
  });
});

describe('event delivery against a target that never answers, or cannot be opened', () => {
  let t: TestServer | undefined;
  let blackhole: Server | undefined;
  const open = new Set<Socket>();
  // Each connection's lifetime as the blackhole saw it, to find sends that overlapped.
  const lifetimes: { openedAt: number; closedAt?: number }[] = [];
  afterAll(async () => {
    await t?.stop();
    for (const socket of open) socket.destroy();
    blackhole?.close();
  });

  it('times a hung send out, backs off, never sends one batch twice at once, and stops promptly', async () => {
    // Accepts connections and reads requests, never answers: a connection a NAT dropped silently.
    blackhole = createNetServer((socket) => {
      open.add(socket);
      const lifetime: { openedAt: number; closedAt?: number } = { openedAt: performance.now() };
      lifetimes.push(lifetime);
      socket.on('data', () => {});
      socket.on('close', () => {
        open.delete(socket);
        lifetime.closedAt = performance.now();
      });
    });
    blackhole.listen(0, '127.0.0.1');
    await once(blackhole, 'listening');
    const { port } = blackhole.address() as AddressInfo;
    t = await startTestServer({
      eventDelivery: {
        awsEndpointUrl: `http://127.0.0.1:${port}`,
        requestTimeoutMs: 400,
        leaseMs: 1000,
        pollIntervalMs: 50,
        backoff: { initialMs: 50, maxMs: 200 },
      },
    });
    const server = t;
    const created = await server.api('POST', '/event_destinations', {
      target: {
        kinesis: {
          auth: { creds: { aws_access_key_id: 'AKIABLACKHOLE0000001', aws_secret_access_key: 'x' } },
          stream_arn: 'arn:aws:kinesis:us-east-1:123456789012:stream/hung',
        },
      },
    });
    const destinationId = created.body.id as string;
    await server.api('POST', '/event_subscriptions', {
      sources: [{ type: 'ip_policy_created.v0' }],
      destination_ids: [destinationId],
    });
    await server.api('POST', '/ip_policies', {});
    // Several lease periods long: a hung send must not let the lease lapse into a second send.
    const status = await eventually(
      async () => (await server.api('GET', `/event_destinations/${destinationId}/delivery_status`)).body,
      (body) => Number(body.consecutive_failures) >= 3,
      10_000,
    );
    expect(status.state).toBe('failing');
    expect(JSON.stringify(status.last_error)).toMatch(/time|abort/i);
    // A timed-out send's close and the next send's connect can reach this process in either order
    // (same poll), so a few milliseconds of overlap are the event loop's; a second send while one
    // hangs would overlap by most of the 400 ms request timeout.
    const now = performance.now();
    let longestOverlapMs = 0;
    for (const [i, a] of lifetimes.entries()) {
      for (const b of lifetimes.slice(i + 1)) {
        const overlap = Math.min(a.closedAt ?? now, b.closedAt ?? now) - Math.max(a.openedAt, b.openedAt);
        longestOverlapMs = Math.max(longestOverlapMs, overlap);
      }
    }
    console.log(
      `blackhole: ${lifetimes.length} connections, longest overlap ${longestOverlapMs.toFixed(0)} ms`,
    );
    expect(lifetimes.length).toBeGreaterThanOrEqual(3);
    expect(longestOverlapMs).toBeLessThan(200);
    const test = await server.api('POST', `/event_destinations/${destinationId}/test_event`);
    expect(test.body).toMatchObject({ delivered: false });
    await server.stop();
    t = undefined;
  });

  it('backs off a destination whose target cannot be opened, and keeps serving requests meanwhile', async () => {
    t = await startTestServer({
      eventDelivery: { pollIntervalMs: 20, backoff: { initialMs: 50, maxMs: 200 } },
    });
    const server = t;
    const make = async () =>
      (await server.api('POST', '/event_destinations', { target: { datadog: { api_key: 'never-used' } } }))
        .body.id as string;
    const [broken, donor] = [await make(), await make()];
    // Another row's sealed target: bound to that row, it will not open here (as with a wrong secret key).
    const db = server.server.app.edgeward.db;
    const sealed = await db
      .selectFrom('event_destinations')
      .select('target_sealed')
      .where('id', '=', donor)
      .executeTakeFirstOrThrow();
    await db
      .updateTable('event_destinations')
      .set({ target_sealed: sealed.target_sealed })
      .where('id', '=', broken)
      .execute();
    await server.api('POST', '/event_subscriptions', {
      sources: [{ type: 'ip_policy_created.v0' }],
      destination_ids: [broken],
    });
    // The longest the event loop was held between two 10 ms ticks: a count of ticks depends on how
    // fast the rest goes on a loaded machine; the longest gap is what a blocked loop would show.
    let beats = 0;
    let last = Date.now();
    let longestGapMs = 0;
    const heartbeat = setInterval(() => {
      const now = Date.now();
      longestGapMs = Math.max(longestGapMs, now - last);
      last = now;
      beats++;
    }, 10);
    try {
      await server.api('POST', '/ip_policies', {});
      const status = await eventually(
        async () => (await server.api('GET', `/event_destinations/${broken}/delivery_status`)).body,
        (body) => Number(body.consecutive_failures) >= 2,
        5000,
      );
      expect(JSON.stringify(status.last_error)).toContain('cannot be unsealed');
      for (let index = 0; index < 5; index++)
        expect((await server.api('GET', '/ip_policies?limit=1')).status).toBe(200);
      // The event loop kept turning: timers fired while the dispatcher retried.
      expect(beats).toBeGreaterThan(0);
      expect(longestGapMs).toBeLessThan(1000);
    } finally {
      clearInterval(heartbeat);
    }
  });
});
