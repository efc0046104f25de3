import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/crypto/tokens.js';
import { createBot } from '../support/principals.js';
import { ADMIN_KEY, idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

interface ApiKeyWire {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata: string;
  owner_id: string;
  token: string | null;
}
interface ApiKeyListWire {
  api_keys: ApiKeyWire[];
  uri: string;
  next_page_uri: string | null;
}

const TOKEN = /^ewk_[A-Za-z0-9_-]{43}$/;

let t: TestServer;
let adminUserId: string;
beforeAll(async () => {
  t = await startTestServer();
  adminUserId = t.server.bootstrap.adminUserId;
});
afterAll(async () => t.stop());

async function createKey(body: Record<string, unknown>, key?: string): Promise<ApiKeyWire> {
  const created = await t.api<ApiKeyWire>('POST', '/api_keys', body, key === undefined ? {} : { key });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

describe('API keys', () => {
  it('creates a key shown once, stores only its hash, and lets it authenticate', async () => {
    const created = await t.api<ApiKeyWire>('POST', '/api_keys', {
      description: 'laptop',
      metadata: '{"host":"dev1"}',
    });
    expect(created.status).toBe(201);
    const key = created.body;
    expect(Object.keys(key).sort()).toEqual([
      'created_at',
      'description',
      'id',
      'metadata',
      'owner_id',
      'token',
      'uri',
    ]);
    expect(key.id).toMatch(idPattern('ak'));
    expect(key.uri).toBe(`${t.baseUrl}/api_keys/${key.id}`);
    expect(key.created_at).toMatch(RFC3339_UTC);
    expect(key.description).toBe('laptop');
    expect(key.metadata).toBe('{"host":"dev1"}');
    expect(key.owner_id).toBe(adminUserId);
    expect(key.token).toMatch(TOKEN);
    const token = key.token as string;

    const stored = await t.server.app.edgeward.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', key.id)
      .executeTakeFirstOrThrow();
    expect(stored.token_hash).toBe(hashToken(token));
    expect(Object.values(stored)).not.toContain(token);

    const withNewKey = await t.api<ApiKeyWire>('GET', `/api_keys/${key.id}`, undefined, { key: token });
    expect(withNewKey.status).toBe(200);
    expect(withNewKey.body).toEqual({ ...key, token: null });

    const listed = await t.api<ApiKeyListWire>('GET', '/api_keys');
    expect(listed.status).toBe(200);
    expect(listed.body.uri).toBe(`${t.baseUrl}/api_keys`);
    expect(listed.body.next_page_uri).toBeNull();
    expect(listed.body.api_keys).toContainEqual({ ...key, token: null });
    for (const item of listed.body.api_keys) expect(item.token).toBeNull();
    // The bootstrap admin key is a row of its own, owned by the admin user.
    expect(listed.body.api_keys.some((item) => item.id !== key.id && item.owner_id === adminUserId)).toBe(
      true,
    );

    const patched = await t.api<ApiKeyWire>('PATCH', `/api_keys/${key.id}`, { description: 'old laptop' });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...key, description: 'old laptop', token: null });
    const metadataOnly = await t.api<ApiKeyWire>('PATCH', `/api_keys/${key.id}`, { metadata: '' });
    expect(metadataOnly.body).toEqual({ ...key, description: 'old laptop', metadata: '', token: null });
  });

  it('revokes a key on DELETE: it gets 401 afterwards', async () => {
    const key = await createKey({ description: 'temporary' });
    const token = key.token as string;
    expect((await t.api('GET', '/api_keys', undefined, { key: token })).status).toBe(200);
    const deleted = await t.api('DELETE', `/api_keys/${key.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const rejected = await t.api('GET', '/api_keys', undefined, { key: token });
    expect(rejected.status).toBe(401);
    expect(rejected.body).toMatchObject({ error_code: 'ERR_EDGEWARD_201', status_code: 401 });
    expect((await t.api('GET', `/api_keys/${key.id}`)).status).toBe(404);
    expect((await t.api('DELETE', `/api_keys/${key.id}`)).status).toBe(404);
    // The admin key itself is unaffected.
    expect((await t.api('GET', '/api_keys', undefined, { key: ADMIN_KEY })).status).toBe(200);
  });

  it('a key may revoke itself', async () => {
    const key = await createKey({});
    const token = key.token as string;
    expect((await t.api('DELETE', `/api_keys/${key.id}`, undefined, { key: token })).status).toBe(204);
    expect((await t.api('GET', '/api_keys', undefined, { key: token })).status).toBe(401);
  });

  it("refuses to delete the admin's last API key, so the account cannot lock itself out", async () => {
    const keys = await t.api<{ api_keys: Array<{ id: string; owner_id: string }> }>('GET', '/api_keys');
    const adminKeys = keys.body.api_keys.filter((k) => k.owner_id === adminUserId);
    // Delete every admin key but one (keeping the test's own key for last).
    const own = await t.api<{ api_keys: Array<{ id: string; description: string }> }>('GET', '/api_keys');
    const bootstrap = own.body.api_keys.find((k) => k.description.includes('EDGEWARD_ADMIN_API_KEY'));
    for (const key of adminKeys) {
      if (key.id !== bootstrap?.id) expect((await t.api('DELETE', `/api_keys/${key.id}`)).status).toBe(204);
    }
    const last = await t.api('DELETE', `/api_keys/${bootstrap?.id}`);
    expect(last.status).toBe(409);
    expect(last.body).toMatchObject({ error_code: 'ERR_EDGEWARD_502' });
    expect(last.body.msg).toMatch(/^id: this is the last API key of user usr_/);
    expect((await t.api('GET', '/api_keys')).status).toBe(200);
  });

  it('admins may create keys for a bot; unknown or malformed owners are reference errors', async () => {
    const bot = (await createBot(t, { name: 'builder' })).id;
    const key = await createKey({ owner_id: bot });
    expect(key.owner_id).toBe(bot);
    expect((await t.api('GET', '/bot_users', undefined, { key: key.token })).status).toBe(200);
    expect((await createKey({ owner_id: adminUserId })).owner_id).toBe(adminUserId);

    for (const ownerId of [
      'bot_2aaaaaaaaaaaaaaaaaaaaaaaaaa',
      'usr_2aaaaaaaaaaaaaaaaaaaaaaaaaa',
      'ipp_x',
      'nobody',
    ]) {
      const response = await t.api('POST', '/api_keys', { owner_id: ownerId });
      expect(response.status, ownerId).toBe(400);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_103' });
      expect(response.body.msg).toBe(`owner_id: no user or bot user with id '${ownerId}' exists`);
    }
    const empty = await t.api('POST', '/api_keys', { owner_id: '' });
    expect(empty.status).toBe(400);
    expect(empty.body.msg).toMatch(/^owner_id: /);
  });

  it('a bot may create keys only for itself', async () => {
    const bot = (await createBot(t, { name: 'self-service' })).id;
    const other = (await createBot(t, { name: 'other' })).id;
    const botToken = (await createKey({ owner_id: bot })).token as string;

    const own = await createKey({ description: 'rotated' }, botToken);
    expect(own.owner_id).toBe(bot);
    const explicit = await createKey({ owner_id: bot }, botToken);
    expect(explicit.owner_id).toBe(bot);

    for (const ownerId of [other, adminUserId, 'bot_2aaaaaaaaaaaaaaaaaaaaaaaaaa']) {
      const refused = await t.api('POST', '/api_keys', { owner_id: ownerId }, { key: botToken });
      expect(refused.status, ownerId).toBe(403);
      expect(refused.body).toMatchObject({ error_code: 'ERR_EDGEWARD_300', status_code: 403 });
      expect(refused.body.msg).toMatch(/^owner_id: /);
    }
    const otherKeys = await t.api<ApiKeyListWire>('GET', '/api_keys', undefined, { key: botToken });
    expect(otherKeys.body.api_keys.every((item) => item.owner_id === bot)).toBe(true);
  });

  it('a bot sees and changes only its own keys; others are 404, admins see all', async () => {
    const bot = (await createBot(t, { name: 'scoped' })).id;
    const other = (await createBot(t, { name: 'neighbour' })).id;
    const botKey = await createKey({ owner_id: bot, description: 'mine' });
    const botToken = botKey.token as string;
    const second = await createKey({ owner_id: bot, description: 'mine too' });
    const otherKey = await createKey({ owner_id: other, description: 'theirs' });
    const adminKey = await createKey({ description: 'admin' });

    const listed = await t.api<ApiKeyListWire>('GET', '/api_keys', undefined, { key: botToken });
    expect(listed.status).toBe(200);
    expect(listed.body.api_keys.map((item) => item.id)).toEqual([second.id, botKey.id]);

    const paged = await t.api<ApiKeyListWire>('GET', '/api_keys?limit=1', undefined, { key: botToken });
    expect(paged.body.api_keys.map((item) => item.id)).toEqual([second.id]);
    expect(paged.body.next_page_uri).toBe(`${t.baseUrl}/api_keys?before_id=${second.id}&limit=1`);
    const nextPage = await t.api<ApiKeyListWire>('GET', paged.body.next_page_uri as string, undefined, {
      key: botToken,
    });
    expect(nextPage.body.api_keys.map((item) => item.id)).toEqual([botKey.id]);
    expect(nextPage.body.next_page_uri).toBeNull();

    expect((await t.api('GET', `/api_keys/${second.id}`, undefined, { key: botToken })).status).toBe(200);
    for (const foreign of [otherKey.id, adminKey.id]) {
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { description: 'hijacked' }],
        ['DELETE', undefined],
      ] as const) {
        const response = await t.api(method, `/api_keys/${foreign}`, body, { key: botToken });
        expect(response.status, `${method} ${foreign}`).toBe(404);
        expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400' });
      }
    }
    // Nothing was changed or removed by the refused calls.
    const otherAfter = await t.api<ApiKeyWire>('GET', `/api_keys/${otherKey.id}`);
    expect(otherAfter.body).toEqual({ ...otherKey, token: null });

    const patched = await t.api<ApiKeyWire>(
      'PATCH',
      `/api_keys/${second.id}`,
      { description: 'renamed' },
      {
        key: botToken,
      },
    );
    expect(patched.status).toBe(200);
    expect(patched.body.description).toBe('renamed');
    expect((await t.api('DELETE', `/api_keys/${second.id}`, undefined, { key: botToken })).status).toBe(204);

    const all = await t.api<ApiKeyListWire>('GET', '/api_keys');
    const ids = all.body.api_keys.map((item) => item.id);
    expect(ids).toEqual(expect.arrayContaining([botKey.id, otherKey.id, adminKey.id]));
    expect(ids).not.toContain(second.id);
  });

  it('validates description, metadata and unknown fields, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ description: 'é'.repeat(128) }, /^description: must be at most 255 bytes/],
      [{ metadata: 'x'.repeat(4097) }, /^metadata: must be at most 4096 bytes/],
      [{ description: 7 }, /^description: must be a string/],
      [{ token: 'ewk_chosen' }, /^token: unknown field/],
      [{ scopes: ['all'] }, /^scopes: unknown field/],
    ];
    for (const [body, message] of cases) {
      const response = await t.api('POST', '/api_keys', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg).toMatch(message);
    }
    const atLimit = await createKey({ description: 'x'.repeat(255), metadata: 'é'.repeat(2048) });
    expect(atLimit.description).toHaveLength(255);

    for (const [body, message] of [
      [{ owner_id: 'bot_x' }, /^owner_id: unknown field/],
      [{ description: 'é'.repeat(128) }, /^description: must be at most 255 bytes/],
      [{ metadata: 'x'.repeat(4097) }, /^metadata: /],
    ] as const) {
      const response = await t.api('PATCH', `/api_keys/${atLimit.id}`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg).toMatch(message);
    }
  });

  it('answers 404 for unknown ids on every item route', async () => {
    const unknown = 'ak_2aaaaaaaaaaaaaaaaaaaaaaaaaa';
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { description: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await t.api(method, `/api_keys/${unknown}`, body);
      expect(response.status, method).toBe(404);
      expect(response.body.msg).toContain(unknown);
    }
  });

  it('replays an idempotent create with the same token instead of minting a second key', async () => {
    const headers = { 'Idempotency-Key': `api-key-${Date.now()}` };
    const first = await t.api<ApiKeyWire>('POST', '/api_keys', { description: 'ci' }, { headers });
    const second = await t.api<ApiKeyWire>('POST', '/api_keys', { description: 'ci' }, { headers });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.body.token).toMatch(TOKEN);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const rows = await t.server.app.edgeward.db
      .selectFrom('api_keys')
      .select('id')
      .where('description', '=', 'ci')
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('requires an API key', async () => {
    const missing = await t.api('GET', '/api_keys', undefined, { key: null });
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ error_code: 'ERR_EDGEWARD_200' });
    const unknown = await t.api('GET', '/api_keys', undefined, { key: 'ewk_not_a_real_key' });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toMatchObject({ error_code: 'ERR_EDGEWARD_201' });
  });
});
