import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgewardApiError, EdgewardClient } from '../../src/client/index.js';
import { ADMIN_KEY, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let client: EdgewardClient;
const statuses: number[] = [];
beforeAll(async () => {
  t = await startTestServer();
  client = new EdgewardClient({
    baseUrl: t.baseUrl,
    apiKey: ADMIN_KEY,
    onResponse: ({ statusCode }) => statuses.push(statusCode),
  });
});
afterAll(async () => {
  await client.close();
  await t.stop();
});

describe('EdgewardClient against a real server', () => {
  it('creates a credential idempotently: a retry with the same key returns the same token', async () => {
    const body = { description: 'ci agent', acl: ['bind:*.ci.example.com'] };
    const first = await client.credentials.create(body, { idempotencyKey: 'client-test-cred' });
    const retry = await client.credentials.create(body, { idempotencyKey: 'client-test-cred' });
    expect(first.token).toMatch(/^ewt_[A-Za-z0-9_-]{43}$/);
    expect(retry).toEqual(first);
    expect((await client.credentials.get(first.id)).token).toBeNull();
    const updated = await client.credentials.update(first.id, { acl: ['*'] });
    expect(updated.acl).toEqual(['*']);
    await client.credentials.delete(first.id);
    await expect(client.credentials.get(first.id)).rejects.toMatchObject({ statusCode: 404 });
  });

  it('iterates every page of a collection, newest first', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await client.ipPolicies.create({ description: `iter-${i}` })).id);
    const seen: string[] = [];
    for await (const policy of client.ipPolicies.iterate({ limit: 2 })) seen.push(policy.id);
    expect(seen.filter((id) => ids.includes(id))).toEqual([...ids].reverse());
    const page = await client.ipPolicies.list({ limit: 2 });
    expect(page.ip_policies).toHaveLength(2);
    expect(page.next_page_uri).not.toBeNull();
  });

  it('raises typed errors with the error code and operation id', async () => {
    const failure = await client.botUsers.get('bot_missing').catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(EdgewardApiError);
    const error = failure as EdgewardApiError;
    expect(error.statusCode).toBe(404);
    expect(error.errorCode).toBe('ERR_EDGEWARD_400');
    expect(error.operationId).toMatch(/^op_/);
    expect(error.isNotFound).toBe(true);
    const invalid = await client.ipPolicies.create({ description: 'x'.repeat(256) }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ statusCode: 400, isTerminal: true });
    expect((invalid as Error).message).toContain('description: must be at most 255 bytes');
  });

  it('covers bots, API keys, reserved addresses, events and sessions', async () => {
    const bot = await client.botUsers.create({ name: 'client-bot' });
    const key = await client.apiKeys.create({ owner_id: bot.id, description: 'bot key' });
    expect(key.token).toMatch(/^ewk_/);
    const asBot = new EdgewardClient({ baseUrl: t.baseUrl, apiKey: key.token as string });
    const owned = await asBot.credentials.create({});
    expect(owned.owner_id).toBe(bot.id);
    await asBot.close();
    await client.credentials.delete(owned.id);

    const addr = await client.reservedAddrs.create({ region: 'jp' });
    expect(addr.addr).toMatch(/^jp\.tcp\.edgeward\.dev:\d+$/);

    const destination = await client.eventDestinations.create({
      format: 'json',
      target: { datadog: { api_key: 'dd-secret', ddsite: 'datadoghq.eu' } },
    });
    expect(destination.target.datadog?.api_key).toBeNull();
    // This server delivers nothing: the status is idle, and a test event is refused with the reason.
    expect(await client.eventDestinations.deliveryStatus(destination.id)).toMatchObject({
      destination_id: destination.id,
      state: 'idle',
      backlog: 0,
      last_error: null,
    });
    const testEvent = await client.eventDestinations.sendTestEvent(destination.id);
    expect(testEvent).toMatchObject({
      delivered: false,
      event: { event_type: 'event_destination_test.v0' },
    });
    expect(testEvent.error).toContain('event delivery is turned off');
    const subscription = await client.eventSubscriptions.create({
      sources: [{ type: 'ip_policy_created.v0' }],
      destination_ids: [destination.id],
    });
    expect(subscription.destinations).toEqual([{ id: destination.id, uri: destination.uri }]);
    await client.eventSubscriptions.addSource(subscription.id, 'credential_created.v0');
    const sources = await client.eventSubscriptions.listSources(subscription.id);
    expect(sources.sources.map((s) => s.type).sort()).toEqual([
      'credential_created.v0',
      'ip_policy_created.v0',
    ]);
    await client.eventSubscriptions.removeSource(subscription.id, 'credential_created.v0');
    await expect(
      client.eventSubscriptions.getSource(subscription.id, 'credential_created.v0'),
    ).rejects.toMatchObject({
      statusCode: 404,
    });

    expect((await client.tunnelSessions.list()).tunnel_sessions).toEqual([]);
    await expect(client.tunnelSessions.restart('ts_missing')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('manages edges and their modules', async () => {
    const policy = await client.ipPolicies.create({});
    const edge = await client.tlsEdges.create({ hostports: ['client.example.com:443'] });
    const module = await client.tlsEdges.replaceModule(edge.id, 'ip_restriction', {
      ip_policy_ids: [policy.id],
    });
    expect(module.ip_policies.map((p) => p.id)).toEqual([policy.id]);
    expect((await client.tlsEdges.getModule(edge.id, 'ip_restriction')).enabled).toBe(true);
    await client.tlsEdges.deleteModule(edge.id, 'ip_restriction');
    await expect(client.tlsEdges.getModule(edge.id, 'ip_restriction')).rejects.toMatchObject({
      statusCode: 404,
    });
    const addr = await client.reservedAddrs.create({});
    const tcp = await client.tcpEdges.create({ hostports: [addr.addr] });
    const updated = await client.tcpEdges.update(tcp.id, { description: 'bastion' });
    expect(updated.description).toBe('bastion');
    await client.tcpEdges.delete(tcp.id);
  });

  it('reports every attempt to onResponse, for metrics', () => {
    expect(statuses.length).toBeGreaterThan(10);
    expect(statuses).toContain(201);
    expect(statuses).toContain(404);
  });
});
