import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsOf as storedEventsOf } from '../support/events.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

/** The object's events with their payloads parsed. */
async function eventsOf(objectId: string) {
  return (await storedEventsOf(t, objectId)).map((row) => ({
    ...row,
    payload: JSON.parse(row.payload) as { object: Record<string, unknown> },
  }));
}

describe('account events outbox', () => {
  it('records ip_policy_created.v0, _updated.v0 and _deleted.v0 with the object', async () => {
    const policy = (await t.api('POST', '/ip_policies', { description: 'office' })).body;
    await t.api('PATCH', `/ip_policies/${policy.id}`, { description: 'hq' });
    await t.api('DELETE', `/ip_policies/${policy.id}`);
    const events = await eventsOf(policy.id as string);
    expect(events.map((e) => e.type)).toEqual([
      'ip_policy_created.v0',
      'ip_policy_updated.v0',
      'ip_policy_deleted.v0',
    ]);
    expect(events[0]?.payload.object).toEqual(policy);
    expect(events[1]?.payload.object).toMatchObject({ id: policy.id, description: 'hq' });
    expect(events[2]?.payload.object).toEqual({ id: policy.id });
    for (const event of events) {
      expect(event.id).toMatch(/^ev_[0-9A-Za-z]{27}$/);
      expect(event.routed_at).toBeNull();
    }
  });

  it('never puts a one-time token into an event', async () => {
    const credential = (await t.api('POST', '/credentials', { description: 'agent' })).body;
    expect(typeof credential.token).toBe('string');
    const [created] = await eventsOf(credential.id as string);
    expect(created?.type).toBe('credential_created.v0');
    expect(created?.payload.object.token).toBeNull();
    const all = await t.server.app.edgeward.db.selectFrom('events').select('payload').execute();
    expect(all.some((row) => row.payload.includes(credential.token as string))).toBe(false);
  });

  it('records nothing for a rejected request and one event for an idempotent retry', async () => {
    const before = (await t.server.app.edgeward.db.selectFrom('events').select('id').execute()).length;
    expect((await t.api('POST', '/ip_policies', { description: 'x'.repeat(300) })).status).toBe(400);
    const headers = { 'idempotency-key': 'events-once' };
    const first = await t.api('POST', '/ip_policies', {}, { headers });
    await t.api('POST', '/ip_policies', {}, { headers });
    const after = (await t.server.app.edgeward.db.selectFrom('events').select('id').execute()).length;
    expect(after - before).toBe(1);
    expect((await eventsOf(first.body.id as string)).map((e) => e.type)).toEqual(['ip_policy_created.v0']);
  });

  it('records the event types of every family of the account half', async () => {
    const bot = (await t.api('POST', '/bot_users', { name: 'events-bot' })).body;
    const destination = (
      await t.api('POST', '/event_destinations', { target: { datadog: { api_key: 'k' } } })
    ).body;
    const subscription = (
      await t.api('POST', '/event_subscriptions', { destination_ids: [destination.id], sources: [] })
    ).body;
    await t.api('POST', `/event_subscriptions/${subscription.id}/sources`, { type: 'ip_policy_created.v0' });
    expect((await eventsOf(bot.id as string)).map((e) => e.type)).toEqual(['bot_user_created.v0']);
    expect((await eventsOf(destination.id as string)).map((e) => e.type)).toEqual([
      'event_destination_created.v0',
    ]);
    expect((await eventsOf(subscription.id as string)).map((e) => e.type)).toEqual([
      'event_subscription_created.v0',
      'event_subscription_updated.v0',
    ]);
  });
});
