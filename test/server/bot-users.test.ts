import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/crypto/ids.js';
import { hashToken } from '../../src/crypto/tokens.js';
import { eventsOf, eventTypesOf } from '../support/events.js';
import { walkPages } from '../support/paging.js';
import { type BotUserWire, createBot } from '../support/principals.js';
import { idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

interface BotUserListWire {
  bot_users: BotUserWire[];
  uri: string;
  next_page_uri: string | null;
}

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

/** Inserts a credential row directly: this test is about bot users, not the credential routes. */
async function insertCredential(table: 'credentials' | 'ssh_credentials', ownerId: string): Promise<string> {
  const db = t.server.app.edgeward.db;
  const base = {
    created_at: '2024-01-01T00:00:00Z',
    description: '',
    metadata: '',
    owner_id: ownerId,
    acl: '[]',
  };
  if (table === 'credentials') {
    const id = newId('cr');
    await db
      .insertInto('credentials')
      .values({ ...base, id, token_hash: hashToken(id) })
      .execute();
    return id;
  }
  const id = newId('sshcr');
  await db
    .insertInto('ssh_credentials')
    .values({ ...base, id, public_key: 'ssh-ed25519 AAAA test', fingerprint: `SHA256:${id}` })
    .execute();
  return id;
}

describe('bot users', () => {
  it('creates, reads, updates, lists and deletes with the wire shape of the spec', async () => {
    const created = await t.api<BotUserWire>('POST', '/bot_users', { name: 'deploy bot' });
    expect(created.status).toBe(201);
    const bot = created.body;
    expect(Object.keys(bot).sort()).toEqual(['active', 'created_at', 'id', 'name', 'uri']);
    expect(bot.id).toMatch(idPattern('bot'));
    expect(bot.uri).toBe(`${t.baseUrl}/bot_users/${bot.id}`);
    expect(bot.name).toBe('deploy bot');
    expect(bot.active).toBe(true);
    expect(bot.created_at).toMatch(RFC3339_UTC);

    const fetched = await t.api<BotUserWire>('GET', `/bot_users/${bot.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(bot);

    const renamed = await t.api<BotUserWire>('PATCH', `/bot_users/${bot.id}`, { name: 'release bot' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...bot, name: 'release bot' });
    const deactivated = await t.api<BotUserWire>('PATCH', `/bot_users/${bot.id}`, { active: false });
    expect(deactivated.status).toBe(200);
    expect(deactivated.body).toEqual({ ...bot, name: 'release bot', active: false });
    expect(typeof deactivated.body.active).toBe('boolean');
    const unchanged = await t.api<BotUserWire>('PATCH', `/bot_users/${bot.id}`, {});
    expect(unchanged.body).toEqual(deactivated.body);

    const listed = await t.api<BotUserListWire>('GET', '/bot_users');
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body).sort()).toEqual(['bot_users', 'next_page_uri', 'uri']);
    expect(listed.body.uri).toBe(`${t.baseUrl}/bot_users`);
    expect(listed.body.next_page_uri).toBeNull();
    expect(listed.body.bot_users).toContainEqual(deactivated.body);

    const deleted = await t.api('DELETE', `/bot_users/${bot.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await t.api('GET', `/bot_users/${bot.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
  });

  it('creates an inactive bot when asked', async () => {
    const bot = await createBot(t, { name: 'dormant', active: false });
    expect(bot.active).toBe(false);
    expect((await t.api<BotUserWire>('GET', `/bot_users/${bot.id}`)).body.active).toBe(false);
  });

  it('validates name, active and unknown fields, naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{}, /^name: is required/],
      [{ name: '' }, /^name: must be 1 to 255 bytes/],
      [{ name: 'é'.repeat(128) }, /^name: must be 1 to 255 bytes/], // 256 bytes, 128 characters
      [{ name: 42 }, /^name: must be a string/],
      [{ name: 'x', active: 'yes' }, /^active: must be a boolean/],
      [{ name: 'x', description: 'not a bot field' }, /^description: unknown field/],
      [{ name: 'x', metadata: '{}' }, /^metadata: unknown field/],
    ];
    for (const [body, message] of cases) {
      const response = await t.api('POST', '/bot_users', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_100', status_code: 400 });
      expect(response.body.msg).toMatch(message);
    }
    expect((await t.api('POST', '/bot_users', { name: 'x'.repeat(255) })).status).toBe(201);

    const bot = await createBot(t, { name: 'ci-bot' });
    for (const [body, message] of [
      [{ name: '' }, /^name: must be 1 to 255 bytes/],
      [{ active: null }, /^active: must be a boolean/],
      // The path's id may be repeated (clients of the original API do); another id may not.
      [{ id: 'bot_other' }, /^id: must be the same as the id in the path$/],
    ] as const) {
      const response = await t.api('PATCH', `/bot_users/${bot.id}`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg).toMatch(message);
    }
    expect((await t.api<BotUserWire>('GET', `/bot_users/${bot.id}`)).body).toEqual(bot);
  });

  it('answers 404 for unknown ids on every item route', async () => {
    const unknown = 'bot_2aaaaaaaaaaaaaaaaaaaaaaaaaa';
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await t.api(method, `/bot_users/${unknown}`, body);
      expect(response.status, method).toBe(404);
      expect(response.body.msg).toContain(unknown);
    }
  });

  it('pages newest first with limit, following absolute next_page_uri links', async () => {
    const own = await startTestServer();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const created = await own.api<BotUserWire>('POST', '/bot_users', { name: `bot ${i}` });
        ids.push(created.body.id);
      }
      const newestFirst = [...ids].reverse();
      const pageSizes: number[] = [];
      const { seen } = await walkPages<BotUserListWire>(
        own,
        `${own.baseUrl}/bot_users?limit=3`,
        'bot_users',
        (page) => {
          expect(page.body.uri).toBe(`${own.baseUrl}/bot_users`);
          pageSizes.push(page.body.bot_users.length);
          const last = page.body.bot_users.at(-1);
          if (page.body.next_page_uri !== null) {
            expect(page.body.next_page_uri).toBe(`${own.baseUrl}/bot_users?before_id=${last?.id}&limit=3`);
          }
        },
      );
      expect(pageSizes).toEqual([3, 3, 1]);
      expect(seen).toEqual(newestFirst);

      const exact = await own.api<BotUserListWire>('GET', `/bot_users?limit=7`);
      expect(exact.body.bot_users.map((bot) => bot.id)).toEqual(newestFirst);
      expect(exact.body.next_page_uri).toBeNull();
      const before = await own.api<BotUserListWire>('GET', `/bot_users?before_id=${ids[3]}`);
      expect(before.body.bot_users.map((bot) => bot.id)).toEqual(newestFirst.slice(4));
    } finally {
      await own.stop();
    }
  });

  it('rejects a limit outside 1..100 or not a number, naming limit', async () => {
    for (const limit of ['0', '101', 'abc', '-1', '2.5']) {
      const response = await t.api('GET', `/bot_users?limit=${limit}`);
      expect(response.status, limit).toBe(400);
      expect(response.body.msg).toBe('limit: must be a whole number from 1 to 100');
    }
    expect((await t.api('GET', '/bot_users?limit=100')).status).toBe(200);
    expect((await t.api('GET', '/bot_users?limit=1')).status).toBe(200);
    const unknownParam = await t.api('GET', '/bot_users?page=2');
    expect(unknownParam.status).toBe(400);
    expect(unknownParam.body.msg).toMatch(/^page: unknown field/);
  });

  it('only admins may create, change or delete bot users', async () => {
    const bot = await createBot(t, { name: 'automation' });
    const other = await createBot(t, { name: 'victim' });
    const key = await t.api<{ token: string }>('POST', '/api_keys', { owner_id: bot.id });
    const asBot = { key: key.body.token };
    for (const [method, path, body] of [
      ['POST', '/bot_users', { name: 'sneaky' }],
      ['PATCH', `/bot_users/${other.id}`, { active: false }],
      ['DELETE', `/bot_users/${other.id}`, undefined],
    ] as const) {
      const response = await t.api(method, path, body, asBot);
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_300' });
    }
    expect((await t.api('GET', `/bot_users/${other.id}`, undefined, asBot)).body).toMatchObject({
      active: true,
    });
    // Refused before the lookup: an unknown id is a 403 too, so a bot cannot probe which ids exist.
    const unknown = 'bot_0000000000000000000000000';
    for (const [method, body] of [
      ['PATCH', { active: false }],
      ['DELETE', undefined],
    ] as const) {
      const response = await t.api(method, `/bot_users/${unknown}`, body, asBot);
      expect(response.status, method).toBe(403);
      expect(response.body).toMatchObject({
        error_code: 'ERR_EDGEWARD_300',
        msg: 'bot_users: only admins may do this',
      });
    }
  });

  it('an inactive bot cannot use its API keys until it is active again', async () => {
    const bot = await createBot(t, { name: 'toggle' });
    const key = await t.api<{ token: string }>('POST', '/api_keys', { owner_id: bot.id });
    expect(key.status).toBe(201);
    const token = key.body.token;

    expect((await t.api('GET', '/bot_users', undefined, { key: token })).status).toBe(200);

    expect((await t.api('PATCH', `/bot_users/${bot.id}`, { active: false })).status).toBe(200);
    const refused = await t.api('GET', '/bot_users', undefined, { key: token });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error_code: 'ERR_EDGEWARD_301', status_code: 403 });
    expect(refused.body.msg).toContain(bot.id);
    // The admin is unaffected.
    expect((await t.api('GET', `/bot_users/${bot.id}`)).status).toBe(200);

    expect((await t.api('PATCH', `/bot_users/${bot.id}`, { active: true })).status).toBe(200);
    expect((await t.api('GET', '/bot_users', undefined, { key: token })).status).toBe(200);
  });

  it('deleting a bot deletes its API keys: they stop working', async () => {
    const bot = await createBot(t, { name: 'short-lived' });
    const key = (await t.api<{ id: string; token: string }>('POST', '/api_keys', { owner_id: bot.id })).body;
    const second = (await t.api<{ id: string }>('POST', '/api_keys', { owner_id: bot.id })).body;
    const adminKey = (await t.api<{ id: string }>('POST', '/api_keys', {})).body;
    expect((await t.api('DELETE', `/bot_users/${bot.id}`)).status).toBe(204);
    expect((await t.api('GET', `/api_keys/${key.id}`)).status).toBe(404);
    expect((await t.api('GET', `/api_keys/${second.id}`)).status).toBe(404);
    // Each removed key is reported as deleted, like a DELETE of the key itself.
    for (const id of [key.id, second.id]) {
      const events = await eventsOf(t, id);
      expect(events.map((event) => event.type)).toEqual(['api_key_created.v0', 'api_key_deleted.v0']);
      expect(JSON.parse(events[1]?.payload ?? '')).toEqual({ object: { id } });
    }
    expect(await eventTypesOf(t, bot.id)).toEqual(['bot_user_created.v0', 'bot_user_deleted.v0']);
    expect(await eventTypesOf(t, adminKey.id)).toEqual(['api_key_created.v0']);
    const rejected = await t.api('GET', '/bot_users', undefined, { key: key.token });
    expect(rejected.status).toBe(401);
    expect(rejected.body).toMatchObject({ error_code: 'ERR_EDGEWARD_201' });
  });

  it('refuses to delete a bot that still owns tunnel or SSH credentials, losing nothing', async () => {
    const bot = await createBot(t, { name: 'agent owner' });
    const key = (await t.api<{ id: string; token: string }>('POST', '/api_keys', { owner_id: bot.id })).body;
    const tunnel = await insertCredential('credentials', bot.id);
    const ssh = await insertCredential('ssh_credentials', bot.id);

    const refused = await t.api('DELETE', `/bot_users/${bot.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error_code: 'ERR_EDGEWARD_502', status_code: 409 });
    expect(refused.body.msg).toBe(`bot user ${bot.id} still owns 2 credentials; delete them first`);
    // Nothing was lost: the bot, its key and its credentials remain, and the key still works.
    expect((await t.api('GET', `/bot_users/${bot.id}`)).status).toBe(200);
    expect((await t.api('GET', `/api_keys/${key.id}`)).status).toBe(200);
    expect((await t.api('GET', '/bot_users', undefined, { key: key.token })).status).toBe(200);

    const db = t.server.app.edgeward.db;
    await db.deleteFrom('credentials').where('id', '=', tunnel).execute();
    const stillSsh = await t.api('DELETE', `/bot_users/${bot.id}`);
    expect(stillSsh.status).toBe(409);
    expect(stillSsh.body.msg).toBe(`bot user ${bot.id} still owns 1 credential; delete them first`);

    await db.deleteFrom('ssh_credentials').where('id', '=', ssh).execute();
    expect((await t.api('DELETE', `/bot_users/${bot.id}`)).status).toBe(204);
    expect((await t.api('GET', `/bot_users/${bot.id}`)).status).toBe(404);
  });

  it('replays an idempotent create instead of creating twice', async () => {
    const headers = { 'Idempotency-Key': `bot-${Date.now()}` };
    const first = await t.api<BotUserWire>('POST', '/bot_users', { name: 'once' }, { headers });
    const second = await t.api<BotUserWire>('POST', '/bot_users', { name: 'once' }, { headers });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });
});
