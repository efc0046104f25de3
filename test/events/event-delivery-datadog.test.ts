import { hostname } from 'node:os';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatadogReceiver } from '../support/datadog-receiver.js';
import { createDestination, deliveryStatus, routedEventIds, subscribe } from '../support/event-delivery.js';
import { eventually } from '../support/eventually.js';
import { OpensslWorkspace } from '../support/openssl.js';
import { RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

/**
 * Event delivery end to end over real HTTPS, on SQLite (`api` project) and PostgreSQL (`postgres`):
 * changes made through the API reach a Datadog logs intake (a local receiver that checks what
 * Datadog requires), in commit order, once each, in batches; a target that is down makes events
 * wait and then arrive; a test event checks credentials; deleting a destination drops its queue;
 * retention prunes what was delivered and keeps what was not.
 */
const KEYS = {
  order: 'dd-key-order-0001',
  test: 'dd-key-test-0002',
  kept: 'dd-key-kept-0003',
  retention: 'dd-key-retention-0004',
};
const UNKNOWN_KEY = 'dd-key-nobody-knows';

let t: TestServer;
let receiver: DatadogReceiver;
let ssl: OpensslWorkspace;
beforeAll(async () => {
  ssl = new OpensslWorkspace();
  const { ca, leaf } = ssl.caAndLeaf('localhost');
  receiver = await new DatadogReceiver(Object.values(KEYS), { cert: leaf.pem, key: leaf.key.pem }).start();
  t = await startTestServer({
    eventDelivery: {
      datadogUrl: receiver.url,
      datadogDispatcher: new Agent({ connect: { ca: ca.pem } }),
      pollIntervalMs: 100,
      backoff: { initialMs: 100, maxMs: 400 },
    },
  });
});
afterAll(async () => {
  await t?.stop();
  await receiver?.stop();
  ssl?.cleanup();
});

const datadogDestination = (apiKey: string, extra: Record<string, unknown> = {}) =>
  createDestination(t, { datadog: { api_key: apiKey, ...extra } });

describe('event delivery to Datadog', () => {
  it('holds events while the intake is down, then delivers each once, in commit order, batched', async () => {
    const destinationId = await datadogDestination(KEYS.order, {
      ddtags: 'env:test,team:edge',
      service: 'audit',
      ddsite: 'datadoghq.eu',
    });
    await subscribe(
      t,
      ['ip_policy_created.v0', 'ip_policy_updated.v0', 'ip_policy_deleted.v0'],
      [destinationId],
    );
    receiver.mode = 'down';

    const created = await Promise.all(
      Array.from({ length: 20 }, (_, index) => t.api('POST', '/ip_policies', { description: `p${index}` })),
    );
    const policies = created.map((response) => response.body);
    for (const policy of policies.slice(0, 10)) {
      expect((await t.api('PATCH', `/ip_policies/${policy.id}`, { description: 'changed' })).status).toBe(
        200,
      );
    }
    for (const policy of policies.slice(10)) {
      expect((await t.api('DELETE', `/ip_policies/${policy.id}`)).status).toBe(204);
    }
    // Not subscribed: must not be delivered.
    await t.api('POST', '/credentials', { description: 'not subscribed' });

    const failing = await eventually(
      () => deliveryStatus(t, destinationId),
      (status) => status.state === 'failing' && status.backlog === 40,
      10_000,
    );
    expect(failing).toMatchObject({ state: 'failing', backlog: 40, delivered: 0, last_success_at: null });
    expect(failing.last_error?.message).toContain('503');
    expect(failing.last_error?.at).toMatch(RFC3339_UTC);
    expect(failing.next_attempt_at).toMatch(RFC3339_UTC);
    expect(failing.consecutive_failures).toBeGreaterThanOrEqual(1);
    expect(failing.oldest_pending_at).toMatch(RFC3339_UTC);
    expect(receiver.envelopesFor(KEYS.order)).toHaveLength(0);

    receiver.mode = 'up';
    const delivered = await eventually(
      () => deliveryStatus(t, destinationId),
      (status) => status.backlog === 0 && status.delivered === 40,
      15_000,
    );
    expect(delivered).toMatchObject({
      state: 'delivering',
      backlog: 0,
      delivered: 40,
      consecutive_failures: 0,
    });
    expect(delivered.last_success_at).toMatch(RFC3339_UTC);
    expect(delivered.next_attempt_at).toBeNull();

    const envelopes = receiver.envelopesFor(KEYS.order);
    expect(envelopes).toHaveLength(40);
    expect(new Set(envelopes.map((envelope) => envelope.id)).size).toBe(40);
    expect(envelopes.map((envelope) => envelope.event_id)).toEqual(await routedEventIds(t, destinationId));
    // The waiting events went out together, not one call each.
    const batches = receiver.batches.filter((batch) => batch.apiKey === KEYS.order);
    expect(batches.reduce((sum, batch) => sum + batch.size, 0)).toBe(40);
    expect(batches.length).toBeLessThanOrEqual(2);

    // The envelope: the outbox event and the resource as the API returned it.
    const outbox = await t.server.app.edgeward.db
      .selectFrom('events')
      .selectAll()
      .where(
        'id',
        'in',
        envelopes.map((envelope) => envelope.event_id),
      )
      .execute();
    const outboxById = new Map(outbox.map((event) => [event.id, event]));
    for (const envelope of envelopes) {
      expect(Object.keys(envelope).sort()).toEqual(['created_at', 'event_id', 'event_type', 'id', 'object']);
      expect(envelope.id).toMatch(/^evd_[0-9A-Za-z]{27}$/);
      expect(envelope.created_at).toMatch(RFC3339_UTC);
      expect(envelope.event_type).toBe(outboxById.get(envelope.event_id)?.type);
      expect(envelope.created_at).toBe(outboxById.get(envelope.event_id)?.created_at);
    }
    for (const policy of policies) {
      const ofPolicy = envelopes.filter((envelope) => envelope.object.id === policy.id);
      const expected = policies.indexOf(policy) < 10 ? ['created', 'updated'] : ['created', 'deleted'];
      expect(ofPolicy.map((envelope) => envelope.event_type)).toEqual(
        expected.map((a) => `ip_policy_${a}.v0`),
      );
      expect(ofPolicy[0]?.object).toEqual(policy);
    }
    expect(envelopes.some((envelope) => envelope.event_type.startsWith('credential_'))).toBe(false);

    const logs = receiver.received.filter((entry) => entry.apiKey === KEYS.order).map((entry) => entry.log);
    for (const log of logs) {
      expect(log).toMatchObject({ ddsource: 'edgeward', ddtags: 'env:test,team:edge', service: 'audit' });
      expect(log.hostname).toBe(hostname());
    }
    expect(receiver.violations).toEqual([]);
  });

  it('sends a test event that reports a refused key, then one accepted, never queued and without secrets', async () => {
    const refused = await datadogDestination(UNKNOWN_KEY);
    const result = await t.api('POST', `/event_destinations/${refused}/test_event`, undefined, {
      headers: { 'content-type': 'application/json' },
      rawBody: '',
    });
    expect(result.status, result.text).toBe(200);
    expect(result.body).toMatchObject({ delivered: false });
    expect(result.body.error).toContain('403');

    const accepted = await datadogDestination(KEYS.test, { service: 'checks' });
    const before = receiver.envelopesFor(KEYS.test).length;
    const ok = await t.api('POST', `/event_destinations/${accepted}/test_event`);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ delivered: true, error: null });
    const event = ok.body.event as Record<string, unknown>;
    expect(event.event_type).toBe('event_destination_test.v0');
    const arrived = receiver.envelopesFor(KEYS.test).slice(before);
    expect(arrived).toEqual([event]);
    const object = arrived[0]?.object as
      | { id: string; target: { datadog: { api_key: unknown } } }
      | undefined;
    expect(object?.id).toBe(accepted);
    expect(object?.target.datadog.api_key).toBeNull();
    // Not an account event: nothing queued, nothing counted as delivered.
    expect(await deliveryStatus(t, accepted)).toMatchObject({ backlog: 0, delivered: 0, state: 'idle' });
    for (const entry of receiver.received) {
      for (const key of [...Object.values(KEYS), UNKNOWN_KEY]) expect(entry.log.message).not.toContain(key);
    }
  });

  it('drops the queue of a destination deleted with a backlog; the others keep delivering', async () => {
    const doomed = await datadogDestination(UNKNOWN_KEY);
    const kept = await datadogDestination(KEYS.kept);
    const subscription = await subscribe(t, ['reserved_addr_created.v0'], [doomed, kept]);
    for (let index = 0; index < 3; index++) {
      expect((await t.api('POST', '/reserved_addrs', { region: 'eu' })).status).toBe(201);
    }
    await eventually(
      () => deliveryStatus(t, doomed),
      (status) => status.state === 'failing' && status.backlog === 3,
      10_000,
    );
    // Still subscribed: the delete is refused (409) and loses nothing.
    expect((await t.api('DELETE', `/event_destinations/${doomed}`)).status).toBe(409);
    expect((await deliveryStatus(t, doomed)).backlog).toBe(3);
    expect(
      (await t.api('PATCH', `/event_subscriptions/${subscription}`, { destination_ids: [kept] })).status,
    ).toBe(200);
    expect((await t.api('DELETE', `/event_destinations/${doomed}`)).status).toBe(204);
    expect((await t.api('GET', `/event_destinations/${doomed}/delivery_status`)).status).toBe(404);
    // The dispatcher drops the queue of the deleted destination (and counts it), backoff or not.
    const left = await eventually(
      () =>
        t.server.app.edgeward.db
          .selectFrom('event_deliveries')
          .select('id')
          .where('destination_id', '=', doomed)
          .execute(),
      (rows) => rows.length === 0,
      5000,
    );
    expect(left).toEqual([]);
    // Counted by the dispatcher once it has dropped them: a moment after the rows are gone.
    const dropped = `edgeward_events_dropped_total{destination_id="${doomed}"} 3`;
    const metrics = await eventually(
      () => t.server.app.metrics.metrics(),
      (text) => text.includes(dropped),
      5000,
    );
    expect(metrics).toContain(dropped);

    expect((await t.api('POST', '/reserved_addrs', { region: 'eu' })).status).toBe(201);
    await eventually(
      async () => receiver.envelopesFor(KEYS.kept).length,
      (count) => count === 4,
      10_000,
    );
    expect(receiver.envelopesFor(KEYS.kept).map((envelope) => envelope.event_type)).toEqual(
      Array(4).fill('reserved_addr_created.v0'),
    );
  });

  it('prunes delivered events past the retention and keeps the ones still waiting', async () => {
    const good = await datadogDestination(KEYS.retention);
    const failing = await datadogDestination(UNKNOWN_KEY);
    await subscribe(t, ['bot_user_created.v0'], [good]);
    await subscribe(t, ['bot_user_updated.v0'], [failing]);
    const bot = (await t.api('POST', '/bot_users', { name: 'retained' })).body;
    expect((await t.api('PATCH', `/bot_users/${bot.id}`, { name: 'renamed' })).status).toBe(200);
    await eventually(
      () => Promise.all([deliveryStatus(t, good), deliveryStatus(t, failing)]),
      ([ok, bad]) => ok.delivered === 1 && bad.backlog === 1,
      10_000,
    );
    const typesOf = async () =>
      (
        await t.server.app.edgeward.db
          .selectFrom('events')
          .select('type')
          .where('object_id', '=', bot.id as string)
          .execute()
      ).map((row) => row.type);
    expect((await typesOf()).sort()).toEqual(['bot_user_created.v0', 'bot_user_updated.v0']);

    const dispatcher = t.server.app.eventDispatcher;
    if (!dispatcher) throw new Error('the test server delivers events');
    // Nothing is old enough yet.
    await dispatcher.prune(Date.now());
    expect(await typesOf()).toHaveLength(2);
    // Eight days on (the default retention is seven): the delivered event goes, the waiting one stays.
    await dispatcher.prune(Date.now() + 8 * 24 * 3600 * 1000);
    expect(await typesOf()).toEqual(['bot_user_updated.v0']);
    expect((await deliveryStatus(t, failing)).backlog).toBe(1);
  });

  it('reports delivery in /metrics: delivered, failed sends, backlog, latency', async () => {
    const response = await fetch(`${t.baseUrl}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
    expect(value(/^edgeward_events_delivered_total\{[^}]*target="datadog"[^}]*\} (\d+)$/m)).toBeGreaterThan(
      0,
    );
    expect(value(/^edgeward_events_delivery_failures_total\{[^}]*\} (\d+)$/m)).toBeGreaterThan(0);
    expect(value(/^edgeward_events_backlog\{[^}]*\} (\d+)$/m)).toBeGreaterThanOrEqual(0);
    expect(
      value(/^edgeward_events_delivery_latency_seconds_count\{target="datadog"\} (\d+)$/m),
    ).toBeGreaterThan(40);
    expect(text).toContain('edgeward_server_process_resident_memory_bytes');
    for (const key of [...Object.values(KEYS), UNKNOWN_KEY]) expect(text).not.toContain(key);
  });
});
