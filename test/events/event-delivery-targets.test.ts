import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryTarget } from '../../src/server/events/targets/delivery-target.js';
import { createDestination, deliveryStatus, subscribe } from '../support/event-delivery.js';
import { eventually } from '../support/eventually.js';
import { FakeDeliveryTarget, tooLargeAbove } from '../support/fake/delivery-target.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The dispatcher's handling of what targets answer besides "all taken": some records refused for
 * now (retried), one refused for good or too large for the target (undeliverable, kept, not
 * blocking the rest), a call refused for its size (halved). Fake targets stand in for the sender;
 * routing, leases, batching and bookkeeping are the real ones, on SQLite and PostgreSQL.
 */
const fakes = new Map<string, DeliveryTarget>();
const LIMITS = { maxRecords: 100, maxRecordBytes: 100_000, maxBatchBytes: 1_000_000 };
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    eventDelivery: {
      pollIntervalMs: 50,
      backoff: { initialMs: 50, maxMs: 200 },
      targetFactory: (_stored, _endpoints, destinationId) => {
        const fake = fakes.get(destinationId);
        if (!fake) throw new Error(`no fake target for ${destinationId}`);
        return fake;
      },
    },
  });
});
afterAll(async () => t?.stop());

/** A destination whose sender is `fake`, subscribed to `type`. */
async function fakeDestination(fake: DeliveryTarget, type: string): Promise<string> {
  const id = await createDestination(t, { datadog: { api_key: 'unused' } });
  fakes.set(id, fake);
  await subscribe(t, [type], [id]);
  return id;
}

describe('event delivery when a target refuses part of a call', () => {
  it('retries the records refused for now, and delivers each once', async () => {
    // Each odd-numbered bot is refused the first time it is sent, as a throttled Kinesis shard would.
    const refusedOnce = new Set<string>();
    const fake = new FakeDeliveryTarget(LIMITS, (records) =>
      records.map((record) => {
        const odd = /"name":"partial-[13579]"/.test(record.body);
        if (odd && !refusedOnce.has(record.deliveryId)) {
          refusedOnce.add(record.deliveryId);
          return { accepted: false, error: 'ProvisionedThroughputExceededException: slow down' };
        }
        return { accepted: true };
      }),
    );
    const id = await fakeDestination(fake, 'bot_user_created.v0');
    for (let index = 0; index < 6; index++) await t.api('POST', '/bot_users', { name: `partial-${index}` });
    const status = await eventually(
      () => deliveryStatus(t, id),
      (current) => current.delivered === 6,
      10_000,
    );
    expect(status).toMatchObject({ backlog: 0, delivered: 6, undeliverable: 0 });
    expect(refusedOnce.size).toBe(3);
    expect(status.last_error?.message).toContain('ProvisionedThroughputExceededException');
    const names = fake.accepted.map((envelope) => envelope.object.name);
    expect([...names].sort()).toEqual(Array.from({ length: 6 }, (_, index) => `partial-${index}`));
  });

  it('keeps a record refused for good, or too large for the target, as undeliverable without blocking the rest', async () => {
    const fake = new FakeDeliveryTarget({ ...LIMITS, maxRecordBytes: 700 }, (records) =>
      records.map((record) =>
        record.body.includes('poison')
          ? { accepted: false, permanent: true, error: 'the target refuses this record' }
          : { accepted: true },
      ),
    );
    const id = await fakeDestination(fake, 'ip_policy_created.v0');
    await t.api('POST', '/ip_policies', { description: 'first' });
    await t.api('POST', '/ip_policies', { description: 'poison' });
    await t.api('POST', '/ip_policies', { description: 'x'.repeat(255), metadata: 'y'.repeat(400) });
    await t.api('POST', '/ip_policies', { description: 'last' });
    const status = await eventually(
      () => deliveryStatus(t, id),
      (current) => current.delivered === 2 && current.undeliverable === 2,
      10_000,
    );
    expect(status).toMatchObject({ backlog: 0, delivered: 2, undeliverable: 2, state: 'delivering' });
    expect(fake.accepted.map((envelope) => envelope.object.description)).toEqual(['first', 'last']);
    const kept = await t.server.app.edgeward.db
      .selectFrom('event_deliveries')
      .select(['state', 'last_error'])
      .where('destination_id', '=', id)
      .where('state', '=', 'undeliverable')
      .execute();
    expect(kept.map((row) => row.last_error).sort()).toEqual([
      expect.stringMatching(/takes at most 700/),
      'the target refuses this record',
    ]);
    // Retention never prunes what could not be delivered.
    await t.server.app.eventDispatcher?.prune(Date.now() + 30 * 24 * 3600 * 1000);
    expect((await deliveryStatus(t, id)).undeliverable).toBe(2);
  });

  it('halves a call the target refuses as too large until it passes', async () => {
    let open = false;
    const tooLarge = tooLargeAbove(3);
    // Unreachable until every event is waiting, so they go out together; then a 413 above 3 records.
    const fake = new FakeDeliveryTarget(LIMITS, (records, call) => {
      if (!open) throw new Error('connect ECONNREFUSED');
      return tooLarge(records, call);
    });
    const id = await fakeDestination(fake, 'credential_created.v0');
    const events = 10;
    for (let index = 0; index < events; index++)
      await t.api('POST', '/credentials', { description: `c${index}` });
    await eventually(
      () => deliveryStatus(t, id),
      (current) => current.backlog === events,
      10_000,
    );
    const before = fake.callSizes.length;
    open = true;
    await eventually(
      () => deliveryStatus(t, id),
      (current) => current.delivered === events,
      10_000,
    );
    const calls = fake.callSizes.slice(before);
    expect(calls[0]).toBe(events);
    expect(calls).toContain(5);
    expect(fake.accepted.map((envelope) => envelope.object.description)).toEqual(
      Array.from({ length: events }, (_, index) => `c${index}`),
    );
  });
});
