import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walkPages } from '../support/paging.js';
import { idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

interface Source {
  type: string;
  uri: string;
}
interface Subscription {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata: string;
  sources: Source[];
  destinations: { id: string; uri: string }[];
  [key: string]: unknown;
}
interface SubscriptionList {
  event_subscriptions: Subscription[];
  uri: string;
  next_page_uri: string | null;
}
interface SourceList {
  sources: Source[];
  uri: string;
  next_page_uri: string | null;
}

let t: TestServer;
let destinationA: string;
let destinationB: string;
beforeAll(async () => {
  t = await startTestServer();
  const make = async () =>
    (await t.api<{ id: string }>('POST', '/event_destinations', { target: { datadog: { api_key: 'k' } } }))
      .body.id;
  destinationA = await make();
  destinationB = await make();
});
afterAll(async () => t.stop());

const SUBSCRIPTION_KEYS = ['created_at', 'description', 'destinations', 'id', 'metadata', 'sources', 'uri'];
const MISSING_DESTINATION = 'ed_000000000000000000000000000';

async function create(body: Record<string, unknown>) {
  return t.api<Subscription>('POST', '/event_subscriptions', body);
}
const sourceUri = (subscriptionId: string, type: string) =>
  `${t.baseUrl}/event_subscriptions/${subscriptionId}/sources/${type}`;

describe('event subscriptions: CRUD and wire shape', () => {
  it('creates, reads, updates, lists and deletes with the wire shape of the spec', async () => {
    const created = await create({
      description: 'policy changes',
      metadata: '{"team":"sec"}',
      sources: [{ type: 'ip_policy_created.v0' }, { type: 'ip_policy_updated.v1' }],
      destination_ids: [destinationA, destinationB],
    });
    expect(created.status).toBe(201);
    const subscription = created.body;
    expect(Object.keys(subscription).sort()).toEqual(SUBSCRIPTION_KEYS);
    expect(subscription.id).toMatch(idPattern('esb'));
    expect(subscription.uri).toBe(`${t.baseUrl}/event_subscriptions/${subscription.id}`);
    expect(subscription.created_at).toMatch(RFC3339_UTC);
    expect(subscription.description).toBe('policy changes');
    expect(subscription.metadata).toBe('{"team":"sec"}');
    expect(subscription.sources).toEqual([
      { type: 'ip_policy_created.v0', uri: sourceUri(subscription.id, 'ip_policy_created.v0') },
      { type: 'ip_policy_updated.v1', uri: sourceUri(subscription.id, 'ip_policy_updated.v1') },
    ]);
    for (const source of subscription.sources) expect(Object.keys(source).sort()).toEqual(['type', 'uri']);
    expect(subscription.destinations).toEqual([
      { id: destinationA, uri: `${t.baseUrl}/event_destinations/${destinationA}` },
      { id: destinationB, uri: `${t.baseUrl}/event_destinations/${destinationB}` },
    ]);
    for (const ref of subscription.destinations) expect(Object.keys(ref).sort()).toEqual(['id', 'uri']);

    const fetched = await t.api<Subscription>('GET', `/event_subscriptions/${subscription.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(subscription);

    const listed = await t.api<SubscriptionList>('GET', '/event_subscriptions');
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body).sort()).toEqual(['event_subscriptions', 'next_page_uri', 'uri']);
    expect(listed.body.uri).toBe(`${t.baseUrl}/event_subscriptions`);
    expect(listed.body.next_page_uri).toBeNull();
    expect(listed.body.event_subscriptions).toContainEqual(subscription);

    const deleted = await t.api('DELETE', `/event_subscriptions/${subscription.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await t.api('GET', `/event_subscriptions/${subscription.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
  });

  it('creates with an empty body: empty strings and empty lists', async () => {
    const created = await create({});
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ description: '', metadata: '', sources: [], destinations: [] });
  });

  it('stores sources and destination ids as JSON arrays in the given order', async () => {
    const created = await create({
      sources: [{ type: 'tunnel_session_started.v2' }, { type: 'ip_policy_created.v0' }],
      destination_ids: [destinationB, destinationA],
    });
    const { rows } = await sql<{ source_types: string; destination_ids: string }>`
      select source_types, destination_ids from event_subscriptions where id = ${created.body.id}
    `.execute(t.server.app.edgeward.db);
    expect(JSON.parse(String(rows[0]?.source_types))).toEqual([
      'tunnel_session_started.v2',
      'ip_policy_created.v0',
    ]);
    expect(JSON.parse(String(rows[0]?.destination_ids))).toEqual([destinationB, destinationA]);
  });

  it('patches description and metadata only, keeping the lists', async () => {
    const created = await create({
      sources: [{ type: 'ip_policy_created.v0' }],
      destination_ids: [destinationA],
    });
    const patched = await t.api<Subscription>('PATCH', `/event_subscriptions/${created.body.id}`, {
      description: 'new',
      metadata: 'm',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...created.body, description: 'new', metadata: 'm' });
  });

  it('patches sources and destination_ids by replacing the whole lists', async () => {
    const created = await create({
      description: 'keep',
      sources: [{ type: 'ip_policy_created.v0' }, { type: 'ip_policy_deleted.v0' }],
      destination_ids: [destinationA],
    });
    const patched = await t.api<Subscription>('PATCH', `/event_subscriptions/${created.body.id}`, {
      sources: [{ type: 'bot_user_created.v0' }],
      destination_ids: [destinationB, destinationA],
    });
    expect(patched.status).toBe(200);
    expect(patched.body.description).toBe('keep');
    expect(patched.body.sources).toEqual([
      { type: 'bot_user_created.v0', uri: sourceUri(created.body.id, 'bot_user_created.v0') },
    ]);
    expect(patched.body.destinations.map((ref) => ref.id)).toEqual([destinationB, destinationA]);

    const emptied = await t.api<Subscription>('PATCH', `/event_subscriptions/${created.body.id}`, {
      sources: [],
      destination_ids: [],
    });
    expect(emptied.status).toBe(200);
    expect(emptied.body).toMatchObject({ sources: [], destinations: [], description: 'keep' });
    expect((await t.api('GET', `/event_subscriptions/${created.body.id}`)).body).toEqual(emptied.body);
  });
});

describe('event subscriptions: validation', () => {
  it('counts description and metadata limits in characters, not bytes', async () => {
    const description255 = 'é'.repeat(255); // 510 bytes, 255 characters
    const ok = await create({ description: description255, metadata: 'é'.repeat(4096) });
    expect(ok.status).toBe(201);
    expect(ok.body.description).toBe(description255);
    expect([...ok.body.metadata]).toHaveLength(4096);

    const long = await create({ description: 'é'.repeat(256) });
    expect(long.status).toBe(400);
    expect(long.body.msg).toMatch(/^description: must be at most 255 characters/);
    const longMetadata = await create({ metadata: 'é'.repeat(4097) });
    expect(longMetadata.status).toBe(400);
    expect(longMetadata.body.msg).toMatch(/^metadata: must be at most 4096 characters/);
    // Astral characters (two UTF-16 units) count once.
    expect((await create({ description: '😀'.repeat(255) })).status).toBe(201);

    const patched = await t.api('PATCH', `/event_subscriptions/${ok.body.id}`, {
      description: 'é'.repeat(256),
    });
    expect(patched.status).toBe(400);
    expect(patched.body.msg).toMatch(/^description: must be at most 255 characters/);
  });

  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      'a type without an action',
      { sources: [{ type: 'ippolicy.v0' }] },
      /^sources\[0\]\.type: must have the form/,
    ],
    [
      'a type without a version',
      { sources: [{ type: 'ip_policy_created.v0' }, { type: 'ip_policy_created' }] },
      /^sources\[1\]\.type: must have the form <resource>_<action>\.v<N>/,
    ],
    [
      'an upper-case type',
      { sources: [{ type: 'IP_POLICY_CREATED.v0' }] },
      /^sources\[0\]\.type: must have the form/,
    ],
    [
      'a type with a bad version',
      { sources: [{ type: 'ip_policy_created.vX' }] },
      /^sources\[0\]\.type: must have the form/,
    ],
    ['a source without a type', { sources: [{}] }, /^sources\[0\]\.type: is required/],
    [
      'a source with an unknown field',
      { sources: [{ type: 'ip_policy_created.v0', uri: 'x' }] },
      /^sources\[0\]\.uri: unknown field/,
    ],
    [
      'duplicate types',
      {
        sources: [
          { type: 'ip_policy_created.v0' },
          { type: 'ip_policy_deleted.v0' },
          { type: 'ip_policy_created.v0' },
        ],
      },
      /^sources\[2\]\.type: 'ip_policy_created\.v0' is listed twice/,
    ],
    [
      'sources that is not a list',
      { sources: { type: 'ip_policy_created.v0' } },
      /^sources: must be an array/,
    ],
    [
      'a destination id of another kind',
      { destination_ids: ['ipp_123'] },
      /^destination_ids\[0\]: must be an id starting with 'ed_'/,
    ],
    ['destination_ids that is not a list', { destination_ids: 'ed_1' }, /^destination_ids: must be an array/],
    ['an unknown field', { destinations: [] }, /^destinations: unknown field/],
  ];
  for (const [name, body, message] of cases) {
    it(`rejects ${name} with a 400 naming the field`, async () => {
      const response = await create(body);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ status_code: 400, error_code: 'ERR_EDGEWARD_100' });
      expect(response.body.msg).toMatch(message);
    });
  }

  it('rejects duplicate destination ids', async () => {
    const response = await create({ destination_ids: [destinationA, destinationB, destinationA] });
    expect(response.status).toBe(400);
    expect(response.body.msg).toBe(
      `destination_ids[2]: '${destinationA}' is listed twice (first at index 0)`,
    );
  });

  it('rejects destination ids that do not exist, naming the position (create and patch)', async () => {
    const created = await create({ destination_ids: [destinationA, MISSING_DESTINATION] });
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({ error_code: 'ERR_EDGEWARD_103', status_code: 400 });
    expect(created.body.msg).toBe(
      `destination_ids[1]: no event destination with id '${MISSING_DESTINATION}' exists`,
    );

    const subscription = await create({ destination_ids: [destinationA] });
    const patched = await t.api('PATCH', `/event_subscriptions/${subscription.body.id}`, {
      destination_ids: [MISSING_DESTINATION],
    });
    expect(patched.status).toBe(400);
    expect(patched.body.msg).toMatch(/^destination_ids\[0\]: no event destination with id/);
    const unchanged = await t.api<Subscription>('GET', `/event_subscriptions/${subscription.body.id}`);
    expect(unchanged.body.destinations.map((ref) => ref.id)).toEqual([destinationA]);
  });

  it('validates patched sources like created ones', async () => {
    const subscription = await create({ sources: [{ type: 'ip_policy_created.v0' }] });
    for (const [sources, message] of [
      [[{ type: 'bad' }], /^sources\[0\]\.type: must have the form/],
      [[{ type: 'a_b.v1' }, { type: 'a_b.v1' }], /^sources\[1\]\.type: 'a_b\.v1' is listed twice/],
      [null, /^sources: must be an array, got null/],
    ] as const) {
      const response = await t.api('PATCH', `/event_subscriptions/${subscription.body.id}`, { sources });
      expect(response.status).toBe(400);
      expect(response.body.msg).toMatch(message);
    }
    expect((await t.api('GET', `/event_subscriptions/${subscription.body.id}`)).body).toEqual(
      subscription.body,
    );
  });

  it('answers 404 for unknown ids on get, patch and delete', async () => {
    const missing = 'esb_000000000000000000000000000';
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { description: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await t.api(method, `/event_subscriptions/${missing}`, body);
      expect(response.status, method).toBe(404);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
      expect(response.body.msg).toContain(missing);
    }
  });
});

describe('event sources under /event_subscriptions/{id}/sources', () => {
  it('lists, adds, gets and removes sources, and the subscription reflects each change', async () => {
    const subscription = (await create({ sources: [{ type: 'ip_policy_created.v0' }] })).body;
    const base = `/event_subscriptions/${subscription.id}/sources`;

    const listed = await t.api<SourceList>('GET', base);
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body).sort()).toEqual(['next_page_uri', 'sources', 'uri']);
    expect(listed.body).toEqual({
      sources: [{ type: 'ip_policy_created.v0', uri: sourceUri(subscription.id, 'ip_policy_created.v0') }],
      uri: `${t.baseUrl}${base}`,
      next_page_uri: null,
    });

    const added = await t.api<Source>('POST', base, { type: 'ip_policy_deleted.v0' });
    expect(added.status).toBe(201);
    expect(Object.keys(added.body).sort()).toEqual(['type', 'uri']);
    expect(added.body).toEqual({
      type: 'ip_policy_deleted.v0',
      uri: sourceUri(subscription.id, 'ip_policy_deleted.v0'),
    });

    const one = await t.api<Source>('GET', `${base}/ip_policy_deleted.v0`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(added.body);
    // The uri a source reads back with is where it can be fetched.
    expect((await t.api<Source>('GET', added.body.uri)).body).toEqual(added.body);

    const afterAdd = await t.api<Subscription>('GET', `/event_subscriptions/${subscription.id}`);
    expect(afterAdd.body.sources.map((source) => source.type)).toEqual([
      'ip_policy_created.v0',
      'ip_policy_deleted.v0',
    ]);

    const removed = await t.api('DELETE', `${base}/ip_policy_created.v0`);
    expect(removed.status).toBe(204);
    expect(removed.text).toBe('');
    expect((await t.api('GET', `${base}/ip_policy_created.v0`)).status).toBe(404);
    const afterRemove = await t.api<SourceList>('GET', base);
    expect(afterRemove.body.sources.map((source) => source.type)).toEqual(['ip_policy_deleted.v0']);
    const subscriptionAfter = await t.api<Subscription>('GET', `/event_subscriptions/${subscription.id}`);
    expect(subscriptionAfter.body.sources).toEqual(afterRemove.body.sources);
  });

  it('pages sources in the order they were added, with a type as before_id', async () => {
    const types = ['c_one.v0', 'a_two.v0', 'b_three.v0', 'e_four.v0', 'd_five.v0'];
    const subscription = (await create({ sources: types.map((type) => ({ type })) })).body;
    const base = `/event_subscriptions/${subscription.id}/sources`;

    const first = await t.api<SourceList>('GET', `${base}?limit=2`);
    expect(first.body.uri).toBe(`${t.baseUrl}${base}`);
    expect(first.body.sources.map((source) => source.type)).toEqual(['c_one.v0', 'a_two.v0']);
    expect(first.body.next_page_uri).toBe(`${t.baseUrl}${base}?before_id=a_two.v0&limit=2`);
    const second = await t.api<SourceList>('GET', first.body.next_page_uri as string);
    expect(second.body.sources.map((source) => source.type)).toEqual(['b_three.v0', 'e_four.v0']);
    expect(second.body.next_page_uri).toBe(`${t.baseUrl}${base}?before_id=e_four.v0&limit=2`);
    const last = await t.api<SourceList>('GET', second.body.next_page_uri as string);
    expect(last.body.sources).toEqual([{ type: 'd_five.v0', uri: sourceUri(subscription.id, 'd_five.v0') }]);
    expect(last.body.next_page_uri).toBeNull();

    // A page that ends exactly at the last source has no next page.
    const exact = await t.api<SourceList>('GET', `${base}?before_id=b_three.v0&limit=2`);
    expect(exact.body.sources.map((source) => source.type)).toEqual(['e_four.v0', 'd_five.v0']);
    expect(exact.body.next_page_uri).toBeNull();
    const whole = await t.api<SourceList>('GET', base);
    expect(whole.body.sources.map((source) => source.type)).toEqual(types);
    expect(whole.body.next_page_uri).toBeNull();

    for (const [query, message] of [
      ['limit=0', 'limit: must be a whole number from 1 to 100'],
      ['limit=101', 'limit: must be a whole number from 1 to 100'],
      ['limit=two', 'limit: must be a whole number from 1 to 100'],
      ['page=2', 'page: unknown field'],
      [
        'before_id=x_gone.v0',
        `before_id: event subscription ${subscription.id} has no source of type 'x_gone.v0'`,
      ],
    ]) {
      const response = await t.api('GET', `${base}?${query}`);
      expect(response.status, query).toBe(400);
      // A source that is not there is a reference to nothing (103), not a malformed query (100).
      const code = query?.startsWith('before_id') ? 'ERR_EDGEWARD_103' : 'ERR_EDGEWARD_100';
      expect(response.body).toMatchObject({ error_code: code, msg: message });
    }
  });

  it('records the subscription as it now stands when a source is added or removed', async () => {
    const subscription = (await create({ sources: [{ type: 'ip_policy_created.v0' }] })).body;
    const base = `/event_subscriptions/${subscription.id}/sources`;
    expect((await t.api('POST', base, { type: 'ip_policy_deleted.v0' })).status).toBe(201);
    const afterAdd = (await t.api<Subscription>('GET', `/event_subscriptions/${subscription.id}`)).body;
    expect((await t.api('DELETE', `${base}/ip_policy_created.v0`)).status).toBe(204);
    const afterRemove = (await t.api<Subscription>('GET', `/event_subscriptions/${subscription.id}`)).body;

    const events = await t.server.app.edgeward.db
      .selectFrom('events')
      .selectAll()
      .where('object_id', '=', subscription.id)
      .orderBy('id')
      .execute();
    expect(events.map((event) => event.type)).toEqual([
      'event_subscription_created.v0',
      'event_subscription_updated.v0',
      'event_subscription_updated.v0',
    ]);
    expect(JSON.parse(events[1]?.payload ?? '')).toEqual({ object: afterAdd });
    expect(JSON.parse(events[2]?.payload ?? '')).toEqual({ object: afterRemove });
    expect(afterRemove.sources.map((source) => source.type)).toEqual(['ip_policy_deleted.v0']);
  });

  it('refuses (409) to add a type that is already a source', async () => {
    const subscription = (await create({ sources: [{ type: 'ip_policy_created.v0' }] })).body;
    const again = await t.api('POST', `/event_subscriptions/${subscription.id}/sources`, {
      type: 'ip_policy_created.v0',
    });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error_code: 'ERR_EDGEWARD_501', status_code: 409 });
    expect(again.body.msg).toMatch(
      /^type: event subscription esb_\w+ already has a source of type 'ip_policy_created\.v0'/,
    );
  });

  it('validates the type of an added source', async () => {
    const subscription = (await create({})).body;
    const base = `/event_subscriptions/${subscription.id}/sources`;
    const bad = await t.api('POST', base, { type: 'created' });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toMatch(/^type: must have the form <resource>_<action>\.v<N>/);
    const missing = await t.api('POST', base, {});
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toMatch(/^type: is required/);
  });

  it('answers 404 for an unknown subscription or an unknown source', async () => {
    const missing = 'esb_000000000000000000000000000';
    for (const [method, path, body] of [
      ['GET', `/event_subscriptions/${missing}/sources`, undefined],
      ['POST', `/event_subscriptions/${missing}/sources`, { type: 'ip_policy_created.v0' }],
      ['GET', `/event_subscriptions/${missing}/sources/ip_policy_created.v0`, undefined],
      ['DELETE', `/event_subscriptions/${missing}/sources/ip_policy_created.v0`, undefined],
    ] as const) {
      const response = await t.api(method, path, body);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.msg).toContain(missing);
    }
    const subscription = (await create({ sources: [{ type: 'ip_policy_created.v0' }] })).body;
    for (const method of ['GET', 'DELETE']) {
      const response = await t.api(
        method,
        `/event_subscriptions/${subscription.id}/sources/ip_policy_deleted.v0`,
      );
      expect(response.status, method).toBe(404);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
      expect(response.body.msg).toBe(
        `event subscription ${subscription.id} has no source of type 'ip_policy_deleted.v0'`,
      );
    }
  });
});

describe('event subscriptions: paging', () => {
  it('pages newest first with limit=2 through absolute next_page_uri links', async () => {
    const mine: string[] = [];
    for (let i = 0; i < 5; i++) mine.push((await create({ description: `page ${i}` })).body.id);

    const all = await t.api<SubscriptionList>('GET', '/event_subscriptions?limit=100');
    const expected = all.body.event_subscriptions.map((item) => item.id);
    expect(expected.length).toBeLessThan(100);
    expect(expected.slice(0, 5)).toEqual([...mine].reverse());

    const { seen, pages } = await walkPages<SubscriptionList>(
      t,
      `${t.baseUrl}/event_subscriptions?limit=2`,
      'event_subscriptions',
      (page) => {
        expect(page.body.uri).toBe(`${t.baseUrl}/event_subscriptions`);
        expect(page.body.event_subscriptions.length).toBeLessThanOrEqual(2);
        for (const item of page.body.event_subscriptions)
          expect(Object.keys(item).sort()).toEqual(SUBSCRIPTION_KEYS);
        const next = page.body.next_page_uri;
        if (next !== null) {
          const last = page.body.event_subscriptions.at(-1)?.id;
          expect(next).toBe(`${t.baseUrl}/event_subscriptions?before_id=${last}&limit=2`);
        }
      },
    );
    expect(pages).toBe(Math.ceil(expected.length / 2));
    expect(seen).toEqual(expected);
  });
});
