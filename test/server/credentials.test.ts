import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/crypto/tokens.js';
import { countRows, walkPages } from '../support/paging.js';
import { createBotWithKey } from '../support/principals.js';
import { idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

const CREDENTIAL_FIELDS = ['acl', 'created_at', 'description', 'id', 'metadata', 'owner_id', 'token', 'uri'];
/** `ewt_` + 32 random bytes in base64url (43 characters, no padding). */
const TOKEN = /^ewt_[A-Za-z0-9_-]{43,}$/;

type Credential = {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata: string;
  token: string | null;
  acl: string[];
  owner_id: string;
};
type CredentialList = { credentials: Credential[]; uri: string; next_page_uri: string | null };

async function storedRow(id: string) {
  return t.server.app.edgeward.db
    .selectFrom('credentials')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirst();
}

describe('tunnel credentials', () => {
  it('creates with the wire shape of the spec and shows the token only in the create response', async () => {
    const created = await t.api<Credential>('POST', '/credentials', {
      description: 'agent on host-1',
      metadata: '{"host":"host-1"}',
      acl: ['bind:*.example.com', 'bind:team=prod'],
    });
    expect(created.status).toBe(201);
    const credential = created.body;
    expect(Object.keys(credential).sort()).toEqual(CREDENTIAL_FIELDS);
    expect(credential.id).toMatch(idPattern('cr'));
    expect(credential.uri).toBe(`${t.baseUrl}/credentials/${credential.id}`);
    expect(credential.created_at).toMatch(RFC3339_UTC);
    expect(credential.description).toBe('agent on host-1');
    expect(credential.metadata).toBe('{"host":"host-1"}');
    expect(credential.acl).toEqual(['bind:*.example.com', 'bind:team=prod']);
    expect(credential.owner_id).toBe(t.server.bootstrap.adminUserId);
    expect(credential.token).toMatch(TOKEN);
    const token = credential.token as string;
    expect(Buffer.from(token.slice('ewt_'.length), 'base64url')).toHaveLength(32);

    // Only the hash is kept, and it never leaves the server.
    const row = await storedRow(credential.id);
    expect(row?.token_hash).toBe(hashToken(token));
    expect(JSON.stringify(row)).not.toContain(token);
    expect(created.text).not.toContain(hashToken(token));

    const fetched = await t.api<Credential>('GET', `/credentials/${credential.id}`);
    expect(fetched.status).toBe(200);
    expect(Object.keys(fetched.body).sort()).toEqual(CREDENTIAL_FIELDS);
    expect(fetched.body).toEqual({ ...credential, token: null });

    const patched = await t.api<Credential>('PATCH', `/credentials/${credential.id}`, {
      description: 'agent on host-2',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...credential, token: null, description: 'agent on host-2' });

    const listed = await t.api<CredentialList>('GET', '/credentials');
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body).sort()).toEqual(['credentials', 'next_page_uri', 'uri']);
    expect(listed.body.uri).toBe(`${t.baseUrl}/credentials`);
    expect(listed.body.credentials).toContainEqual({
      ...credential,
      token: null,
      description: 'agent on host-2',
    });
    for (const item of listed.body.credentials) expect(item.token).toBeNull();

    for (const response of [fetched, patched, listed]) {
      expect(response.text).not.toContain(token);
      expect(response.text).not.toContain(hashToken(token));
      expect(response.text).not.toContain('token_hash');
    }

    const deleted = await t.api('DELETE', `/credentials/${credential.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await t.api('GET', `/credentials/${credential.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
    expect(await storedRow(credential.id)).toBeUndefined();
  });

  it('creates with an empty body: no restrictions, empty description and metadata, a fresh token', async () => {
    const first = await t.api<Credential>('POST', '/credentials', {});
    const second = await t.api<Credential>('POST', '/credentials');
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(first.body).toMatchObject({ description: '', metadata: '', acl: [] });
    expect(second.body.acl).toEqual([]);
    expect(first.body.token).toMatch(TOKEN);
    expect(second.body.token).toMatch(TOKEN);
    expect(first.body.token).not.toBe(second.body.token);
    expect(first.body.id).not.toBe(second.body.id);
  });

  it('replays the same token for a retried create with the same Idempotency-Key and body', async () => {
    const headers = { 'idempotency-key': 'credential-retry-1' };
    const body = { description: 'retried', acl: ['bind:retry.example.com'] };
    const before = (await t.api<CredentialList>('GET', '/credentials')).body.credentials.length;

    const first = await t.api<Credential>('POST', '/credentials', body, { headers });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const retry = await t.api<Credential>('POST', '/credentials', body, { headers });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
    expect(retry.body.token).toMatch(TOKEN);
    expect(retry.body.token).toBe(first.body.token);
    expect((await t.api<CredentialList>('GET', '/credentials')).body.credentials).toHaveLength(before + 1);

    const changed = await t.api('POST', '/credentials', { ...body, description: 'other' }, { headers });
    expect(changed.status).toBe(409);
    expect(changed.body).toMatchObject({ error_code: 'ERR_EDGEWARD_500', status_code: 409 });
    expect(changed.body.msg).toMatch(/^Idempotency-Key: /);
    // The id of what the key made, never the rest of that answer: its token was for the first caller.
    expect(changed.body.details).toEqual({ operation_id: expect.any(String), resource_id: first.body.id });
    expect(JSON.stringify(changed.body)).not.toContain(first.body.token);
    expect((await t.api<CredentialList>('GET', '/credentials')).body.credentials).toHaveLength(before + 1);
  });

  it('accepts every valid ACL rule form, on create and on update', async () => {
    const rules = [
      '*',
      'bind:example.com',
      'bind:*.example.com',
      'bind:1.tcp.edgeward.dev:12345',
      'bind:203.0.113.7:443',
      'bind:[2001:db8::1]:8080',
      'bind:team=prod',
      'bind:*=prod',
      'bind:team=*',
    ];
    const created = await t.api<Credential>('POST', '/credentials', { acl: rules });
    expect(created.status).toBe(201);
    expect(created.body.acl).toEqual(rules);
    expect((await t.api<Credential>('GET', `/credentials/${created.body.id}`)).body.acl).toEqual(rules);

    const narrowed = await t.api<Credential>('PATCH', `/credentials/${created.body.id}`, {
      acl: ['bind:api.example.com'],
    });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.acl).toEqual(['bind:api.example.com']);
    expect(narrowed.body.description).toBe('');

    // A PATCH without acl keeps it; an empty list lifts every restriction.
    const kept = await t.api<Credential>('PATCH', `/credentials/${created.body.id}`, { metadata: 'm' });
    expect(kept.body.acl).toEqual(['bind:api.example.com']);
    const cleared = await t.api<Credential>('PATCH', `/credentials/${created.body.id}`, { acl: [] });
    expect(cleared.body).toMatchObject({ acl: [], metadata: 'm', token: null });
  });

  it('rejects invalid ACL rules with a 400 naming the rule', async () => {
    const cases: Array<[string, RegExp]> = [
      ['connect:x', /only 'bind:<domain\|address\|label>' rules and '\*' are allowed$/],
      ['bind:', /the bind target is empty$/],
      ['bind:*', /bind target must be/],
      ['bind:foo.*.example.com', /bind target must be/],
      ['bind:a*.example.com', /bind target must be/],
      ['bind:example.com:0', /bind target must be/],
      ['bind:example.com:70000', /bind target must be/],
      ['bind:=prod', /bind target must be/],
      ['bind:team=pr od', /bind target must be/],
    ];
    for (const [rule, reason] of cases) {
      const response = await t.api('POST', '/credentials', { acl: ['*', rule] });
      expect(response.status, rule).toBe(400);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_100', status_code: 400 });
      expect(response.body.msg, rule).toContain(`acl[1]: '${rule}' is not a valid rule; `);
      expect(response.body.msg, rule).toMatch(reason);
    }
    const exact = await t.api('POST', '/credentials', { acl: ['bind:example.com', 'connect:x'] });
    expect(exact.body.msg).toBe(
      "acl[1]: 'connect:x' is not a valid rule; only 'bind:<domain|address|label>' rules and '*' are allowed",
    );

    const existing = (await t.api<Credential>('POST', '/credentials', { acl: ['*'] })).body;
    const badPatch = await t.api('PATCH', `/credentials/${existing.id}`, { acl: ['connect:x'] });
    expect(badPatch.status).toBe(400);
    expect(badPatch.body.msg).toMatch(/^acl\[0\]: 'connect:x' is not a valid rule/);
    expect((await t.api<Credential>('GET', `/credentials/${existing.id}`)).body.acl).toEqual(['*']);

    const notList = await t.api('POST', '/credentials', { acl: 'bind:example.com' });
    expect(notList.status).toBe(400);
    expect(notList.body.msg).toBe('acl: must be an array, got string');
    const nullAcl = await t.api('POST', '/credentials', { acl: null });
    expect(nullAcl.status).toBe(400);
    expect(nullAcl.body.msg).toBe('acl: must be an array, got null');
    const notString = await t.api('POST', '/credentials', { acl: ['*', 7] });
    expect(notString.status).toBe(400);
    expect(notString.body.msg).toBe('acl[1]: must be a string, got number');

    expect((await t.api('POST', '/credentials', { acl: Array(100).fill('*') })).status).toBe(201);
    const tooMany = await t.api('POST', '/credentials', { acl: Array(101).fill('*') });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.msg).toBe('acl: must have at most 100 rules');
    const longRule = `bind:k=${'v'.repeat(249)}`; // 256 bytes
    const tooLong = await t.api('POST', '/credentials', { acl: [longRule] });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.msg).toBe('acl[0]: must be at most 255 bytes');
    expect((await t.api('POST', '/credentials', { acl: [longRule.slice(0, -1)] })).status).toBe(201);
  });

  it('validates description, metadata, unknown fields and types', async () => {
    const description = await t.api('POST', '/credentials', { description: 'é'.repeat(128) });
    expect(description.status).toBe(400);
    expect(description.body.msg).toBe('description: must be at most 255 bytes');
    expect((await t.api('POST', '/credentials', { description: 'x'.repeat(255) })).status).toBe(201);
    const metadata = await t.api('POST', '/credentials', { metadata: 'x'.repeat(4097) });
    expect(metadata.status).toBe(400);
    expect(metadata.body.msg).toBe('metadata: must be at most 4096 bytes');
    expect((await t.api('POST', '/credentials', { metadata: 'x'.repeat(4096) })).status).toBe(201);

    const unknown = await t.api('POST', '/credentials', { token: 'ewt_mine' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.msg).toBe('token: unknown field');
    const wrongType = await t.api('POST', '/credentials', { description: 5 });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.msg).toBe('description: must be a string, got number');

    const existing = (await t.api<Credential>('POST', '/credentials', {})).body;
    for (const [field, value] of [
      ['owner_id', existing.owner_id],
      ['token', 'ewt_new'],
    ] as const) {
      const patch = await t.api('PATCH', `/credentials/${existing.id}`, { [field]: value });
      expect(patch.status, field).toBe(400);
      expect(patch.body.msg).toBe(`${field}: unknown field`);
    }
    // The path's id may be repeated in the body; another id is refused by name.
    const otherId = await t.api('PATCH', `/credentials/${existing.id}`, { id: 'cr_other' });
    expect(otherId.status).toBe(400);
    expect(otherId.body.msg).toBe('id: must be the same as the id in the path');
    const sameId = await t.api('PATCH', `/credentials/${existing.id}`, { id: existing.id });
    expect(sameId.status).toBe(200);
    const patchMetadata = await t.api('PATCH', `/credentials/${existing.id}`, { metadata: 'x'.repeat(4097) });
    expect(patchMetadata.status).toBe(400);
    expect(patchMetadata.body.msg).toBe('metadata: must be at most 4096 bytes');
  });

  it('answers 404 for unknown ids on get, patch and delete', async () => {
    const unknown = 'cr_0000000000000000000000000';
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const response = await t.api(method, `/credentials/${unknown}`, method === 'PATCH' ? {} : undefined);
      expect(response.status, method).toBe(404);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
      expect(response.body.msg).toBe(`tunnel credential with id '${unknown}' not found`);
    }
  });

  it('pages newest first across pages through absolute next_page_uri links', async () => {
    const ours: string[] = [];
    for (let i = 0; i < 5; i++) {
      ours.push((await t.api<Credential>('POST', '/credentials', { description: `page-${i}` })).body.id);
    }
    const { seen, pages } = await walkPages<CredentialList>(
      t,
      '/credentials?limit=2',
      'credentials',
      (page, seen) => {
        expect(page.body.credentials.length).toBeLessThanOrEqual(2);
        for (const item of page.body.credentials) expect(item.token).toBeNull();
        const next = page.body.next_page_uri;
        if (next !== null) {
          expect(next.startsWith(`${t.baseUrl}/credentials?`)).toBe(true);
          expect(new URL(next).searchParams.get('limit')).toBe('2');
          expect(new URL(next).searchParams.get('before_id')).toBe(seen.at(-1));
        }
      },
    );
    if (pages === 1) throw new Error('expected more than one page');
    // The first page holds the two newest; the whole walk is strictly newest first, so no duplicates.
    expect(seen.slice(0, 2)).toEqual([ours[4], ours[3]]);
    expect(seen).toEqual([...seen].sort().reverse());
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => ours.includes(id))).toEqual([...ours].reverse());
    expect(seen).toHaveLength(await countRows(t, 'credentials'));
  });
});

describe('tunnel credential owners', () => {
  it('lets an admin name a bot user as owner, and refuses unknown owners', async () => {
    const { botId } = await createBotWithKey(t, 'owner-by-admin');
    const owned = await t.api<Credential>('POST', '/credentials', { owner_id: botId });
    expect(owned.status).toBe(201);
    expect(owned.body.owner_id).toBe(botId);
    expect((await t.api<Credential>('GET', `/credentials/${owned.body.id}`)).body.owner_id).toBe(botId);

    const adminId = t.server.bootstrap.adminUserId;
    const self = await t.api<Credential>('POST', '/credentials', { owner_id: adminId });
    expect(self.status).toBe(201);
    expect(self.body.owner_id).toBe(adminId);

    for (const missing of ['bot_0000000000000000000000000', 'usr_0000000000000000000000000', 'cr_abc', 'x']) {
      const response = await t.api('POST', '/credentials', { owner_id: missing });
      expect(response.status, missing).toBe(400);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_103' });
      expect(response.body.msg).toBe(`owner_id: no user or bot user with id '${missing}' exists`);
    }
    const empty = await t.api('POST', '/credentials', { owner_id: '' });
    expect(empty.status).toBe(400);
    expect(empty.body.msg).toMatch(/^owner_id: /);
    const wrongType = await t.api('POST', '/credentials', { owner_id: 42 });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.msg).toBe('owner_id: must be a string, got number');
  });

  it('a bot sees and changes only its own credentials; others are 404, admins see all', async () => {
    const { botId, key } = await createBotWithKey(t, 'credential-scoped');
    const { botId: otherBotId } = await createBotWithKey(t, 'credential-neighbour');
    const asBot = { key };
    const mine = (await t.api<Credential>('POST', '/credentials', { description: 'mine' }, asBot)).body;
    const mineToo = (await t.api<Credential>('POST', '/credentials', { description: 'mine too' }, asBot))
      .body;
    const admins = (await t.api<Credential>('POST', '/credentials', { acl: ['bind:admin.example.com'] }))
      .body;
    const neighbours = (await t.api<Credential>('POST', '/credentials', { owner_id: otherBotId })).body;

    const listed = await t.api<CredentialList>('GET', '/credentials', undefined, asBot);
    expect(listed.status).toBe(200);
    expect(listed.body.credentials.map((item) => item.id)).toEqual([mineToo.id, mine.id]);
    expect(listed.body.credentials.every((item) => item.owner_id === botId)).toBe(true);
    const paged = await t.api<CredentialList>('GET', '/credentials?limit=1', undefined, asBot);
    expect(paged.body.credentials.map((item) => item.id)).toEqual([mineToo.id]);
    expect(paged.body.next_page_uri).toBe(`${t.baseUrl}/credentials?before_id=${mineToo.id}&limit=1`);
    const last = await t.api<CredentialList>('GET', paged.body.next_page_uri as string, undefined, asBot);
    expect(last.body.credentials.map((item) => item.id)).toEqual([mine.id]);
    expect(last.body.next_page_uri).toBeNull();

    for (const foreign of [admins, neighbours]) {
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { acl: ['*'] }],
        ['DELETE', undefined],
      ] as const) {
        const response = await t.api(method, `/credentials/${foreign.id}`, body, asBot);
        expect(response.status, `${method} ${foreign.id}`).toBe(404);
        expect(response.body).toMatchObject({
          error_code: 'ERR_EDGEWARD_400',
          msg: `tunnel credential with id '${foreign.id}' not found`,
        });
      }
      // Untouched by the refused calls.
      expect((await t.api('GET', `/credentials/${foreign.id}`)).body).toEqual({ ...foreign, token: null });
    }
    // No event was recorded for the refused changes.
    const events = await t.server.app.edgeward.db
      .selectFrom('events')
      .select('id')
      .where('object_id', 'in', [admins.id, neighbours.id])
      .where('type', '!=', 'credential_created.v0')
      .execute();
    expect(events).toEqual([]);

    const patched = await t.api<Credential>('PATCH', `/credentials/${mine.id}`, { acl: ['*'] }, asBot);
    expect(patched.status).toBe(200);
    expect(patched.body.acl).toEqual(['*']);
    expect((await t.api('GET', `/credentials/${mine.id}`, undefined, asBot)).status).toBe(200);
    expect((await t.api('DELETE', `/credentials/${mineToo.id}`, undefined, asBot)).status).toBe(204);

    const all = await walkPages<CredentialList>(t, '/credentials', 'credentials');
    expect(all.seen).toEqual(expect.arrayContaining([mine.id, admins.id, neighbours.id]));
    expect(all.seen).not.toContain(mineToo.id);
    // The admin may still read, change and delete what a bot owns.
    expect((await t.api('PATCH', `/credentials/${mine.id}`, { description: 'by admin' })).status).toBe(200);
    expect((await t.api('DELETE', `/credentials/${mine.id}`)).status).toBe(204);
  });

  it('makes a bot the owner of what it creates and forbids it to name anyone else', async () => {
    const { botId, key } = await createBotWithKey(t, 'agent-provisioner');
    const { botId: otherBotId } = await createBotWithKey(t, 'other-bot');

    const own = await t.api<Credential>('POST', '/credentials', { description: 'by bot' }, { key });
    expect(own.status).toBe(201);
    expect(own.body.owner_id).toBe(botId);
    expect(own.body.token).toMatch(TOKEN);
    const named = await t.api<Credential>('POST', '/credentials', { owner_id: botId }, { key });
    expect(named.status).toBe(201);
    expect(named.body.owner_id).toBe(botId);

    for (const other of [t.server.bootstrap.adminUserId, otherBotId, 'bot_0000000000000000000000000']) {
      const response = await t.api('POST', '/credentials', { owner_id: other }, { key });
      expect(response.status, other).toBe(403);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_300', status_code: 403 });
      expect(response.body.msg).toBe('owner_id: only admins may name an owner other than themselves');
    }
  });
});
