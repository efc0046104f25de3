import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../src/schemas/common.js';
import { walkPages } from '../support/paging.js';
import { ADMIN_KEY, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

function expectErrorShape(response: { status: number; headers: Headers; body: Record<string, unknown> }) {
  expect(Object.keys(response.body).sort()).toEqual(['details', 'error_code', 'msg', 'status_code']);
  expect(response.body.status_code).toBe(response.status);
  expect(response.body.error_code).toMatch(/^ERR_EDGEWARD_\d+$/);
  expect(typeof response.body.msg).toBe('string');
  const details = response.body.details as Record<string, unknown>;
  // operation_id always; resource_id only on ERR_EDGEWARD_500 (what the reused key made).
  const expectedKeys =
    response.body.error_code === 'ERR_EDGEWARD_500' ? ['operation_id', 'resource_id'] : ['operation_id'];
  expect(Object.keys(details)).toEqual(expectedKeys);
  expect(details.operation_id).toMatch(/^op_[0-9A-Za-z]{27}$/);
  expect(response.headers.get('svc-operation-id')).toBe(details.operation_id);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
}

describe('authentication', () => {
  it('401s without an Authorization header', async () => {
    const response = await t.api('GET', '/ip_policies', undefined, { key: null });
    expect(response.status).toBe(401);
    expectErrorShape(response);
    expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_200' });
    expect(response.body.msg).toMatch(/^Authorization: /);
  });

  it('401s with an unknown key or a malformed header', async () => {
    const unknown = await t.api('GET', '/ip_policies', undefined, { key: 'ewk_nope' });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toMatchObject({ error_code: 'ERR_EDGEWARD_201' });
    const basic = await t.api('GET', '/ip_policies', undefined, {
      key: null,
      headers: { authorization: `Basic ${ADMIN_KEY}` },
    });
    expect(basic.status).toBe(401);
    expectErrorShape(basic);
  });

  it('401s on unknown routes too, so route names do not leak without a key', async () => {
    expect((await t.api('GET', '/nope', undefined, { key: null })).status).toBe(401);
    const known = await t.api('GET', '/nope');
    expect(known.status).toBe(404);
    expectErrorShape(known);
  });
});

describe('Svc-Version', () => {
  it('400s when missing or unsupported, with its own code', async () => {
    const missing = await t.api('GET', '/ip_policies', undefined, { version: null });
    expect(missing.status).toBe(400);
    expectErrorShape(missing);
    expect(missing.body).toMatchObject({ error_code: 'ERR_EDGEWARD_101' });
    expect(missing.body.msg).toMatch(/^Svc-Version: /);
    const old = await t.api('GET', '/ip_policies', undefined, { version: '1' });
    expect(old.status).toBe(400);
    expect(old.body).toMatchObject({ error_code: 'ERR_EDGEWARD_101' });
  });
});

describe('request bodies', () => {
  it('415s a body that is not JSON', async () => {
    const response = await t.api('POST', '/ip_policies', undefined, {
      rawBody: 'description=x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(response.status).toBe(415);
    expectErrorShape(response);
  });

  it('400s malformed JSON', async () => {
    const response = await t.api('POST', '/ip_policies', undefined, { rawBody: '{"description":' });
    expect(response.status).toBe(400);
    expectErrorShape(response);
    expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_102' });
  });

  it('says where malformed JSON breaks, in the parser’s words', async () => {
    const cut = await t.api('POST', '/ip_policies', undefined, { rawBody: '{"description": "secret' });
    expect(cut.status).toBe(400);
    expect(cut.body.msg).toMatch(/^body: not valid JSON \(Unterminated string in JSON at position 23\b/);
    // V8 quotes the text for some errors; the answer (and so the logs) must not carry it.
    const typo = await t.api('POST', '/ip_policies', undefined, {
      rawBody: '{"description": "secret", "x": tru}',
    });
    expect(typo.body.msg).toBe("body: not valid JSON (Unexpected token '}')");
    // Longer texts are quoted cut at one end or both ("..."); none of it comes back either.
    for (const rawBody of [
      `{"description": "x", "secret": ${'s'.repeat(40)}}`,
      `${'s'.repeat(40)}secret`,
      `{"a": 1, "secretsecretsecret": ${'y'.repeat(30)}}`,
    ]) {
      const long = await t.api('POST', '/ip_policies', undefined, { rawBody });
      expect(long.status, rawBody).toBe(400);
      expect(long.body.msg, rawBody).toMatch(/^body: not valid JSON \(Unexpected token '.'\)$/);
    }
  });

  it('refuses a member named __proto__ anywhere, spelled out or escaped, and says so', async () => {
    for (const rawBody of [
      '{"description": "x", "__proto__": {"admin": true}}',
      '{"description": "x", "metadata": "m", "\\u005f_proto__": {}}',
      '{"description": "x", "\\u005f\\u005f\\u0070\\u0072\\u006f\\u0074\\u006f\\u005f\\u005f": {}}',
      '{"description": "x", "constructor": {"prototype": {"admin": true}}}',
    ]) {
      const response = await t.api('POST', '/ip_policies', undefined, { rawBody });
      expect(response.status, rawBody).toBe(400);
      expectErrorShape(response);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_100' });
      expect(response.body.msg).toMatch(/^body: a member named "__proto__"/);
    }
    const list = await t.api('GET', '/ip_policies');
    expect(list.body.ip_policies).toEqual([]);
  });

  it('accepts text that only mentions proto, escapes and a byte order mark', async () => {
    const response = await t.api('POST', '/ip_policies', undefined, {
      rawBody: '\ufeff{"description": "prototype \\u00e9", "metadata": "__proto__"}',
    });
    expect(response.status, response.text).toBe(201);
    expect(response.body).toMatchObject({ description: 'prototype é', metadata: '__proto__' });
  });

  it('400s unknown fields and wrong types, naming the field', async () => {
    const unknown = await t.api('POST', '/ip_policies', { description: 'x', colour: 'red' });
    expect(unknown.status).toBe(400);
    expectErrorShape(unknown);
    expect(unknown.body.msg).toBe('colour: unknown field');
    const wrongType = await t.api('POST', '/ip_policies', { description: 42 });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.msg).toBe('description: must be a string, got number');
    const notObject = await t.api('POST', '/ip_policies', ['x']);
    expect(notObject.status).toBe(400);
  });

  it('413s bodies over 1 MiB', async () => {
    const response = await t.api('POST', '/ip_policies', { metadata: 'x'.repeat(1_100_000) });
    expect(response.status).toBe(413);
    expectErrorShape(response);
  });
});

describe('Idempotency-Key', () => {
  it('replays the original response for the same key and body', async () => {
    const headers = { 'idempotency-key': 'create-office-policy' };
    const first = await t.api('POST', '/ip_policies', { description: 'office' }, { headers });
    const second = await t.api('POST', '/ip_policies', { description: 'office' }, { headers });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const all = await t.api<{ ip_policies: Array<{ description: string }> }>('GET', '/ip_policies');
    expect(all.body.ip_policies.filter((p) => p.description === 'office')).toHaveLength(1);
  });

  it('409s the same key with a different body, and keeps the first resource', async () => {
    const headers = { 'idempotency-key': 'reused-key' };
    const first = await t.api<{ id: string }>('POST', '/ip_policies', { description: 'a' }, { headers });
    const second = await t.api<ErrorBody>('POST', '/ip_policies', { description: 'b' }, { headers });
    expect(second.status).toBe(409);
    expectErrorShape(second);
    expect(second.body).toMatchObject({ error_code: 'ERR_EDGEWARD_500' });
    // It names what the key made, so a client whose first answer was lost can find it.
    expect(second.body.details.resource_id).toBe(first.body.id);
    // Other errors say no resource_id (checked by expectErrorShape for every error in this file).
    expect(second.body.msg).toContain(`which made ${first.body.id}`);
    expect((await t.api('GET', `/ip_policies/${first.body.id}`)).status).toBe(200);
  });

  it('creates exactly one resource under concurrent retries', async () => {
    const headers = { 'idempotency-key': 'concurrent-key' };
    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.api('POST', '/ip_policies', { description: 'concurrent' }, { headers }),
      ),
    );
    const ids = new Set(responses.map((r) => r.body.id));
    expect(responses.every((r) => r.status === 201)).toBe(true);
    expect(ids.size).toBe(1);
  });

  it('does not record a failed request, so a corrected retry with the same key works', async () => {
    const headers = { 'idempotency-key': 'fix-and-retry' };
    const bad = await t.api('POST', '/ip_policies', { description: 'x'.repeat(300) }, { headers });
    expect(bad.status).toBe(400);
    const corrected = await t.api('POST', '/ip_policies', { description: 'x' }, { headers });
    expect(corrected.status).toBe(201);
    expect(corrected.body.description).toBe('x');
  });

  it('400s a malformed key', async () => {
    const response = await t.api('POST', '/ip_policies', {}, { headers: { 'idempotency-key': 'a b' } });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_106' });
  });
});

describe('paging', () => {
  it('pages newest first with an absolute next_page_uri until null', async () => {
    const created: string[] = [];
    for (let i = 0; i < 7; i++) {
      created.push((await t.api('POST', '/ip_policies', { description: `page-${i}` })).body.id as string);
    }
    const { seen, pages } = await walkPages<{
      ip_policies: Array<{ id: string }>;
      next_page_uri: string | null;
    }>(t, `/ip_policies?limit=3`, 'ip_policies', (page) => {
      expect(page.body.ip_policies.length).toBeLessThanOrEqual(3);
      if (page.body.next_page_uri) {
        expect(page.body.next_page_uri.startsWith(`${t.baseUrl}/ip_policies?before_id=`)).toBe(true);
        expect(page.body.next_page_uri).toContain('&limit=3');
      }
    });
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort().reverse());
    const ours = seen.filter((id) => created.includes(id));
    expect(ours).toEqual([...created].reverse());
  });

  it('keeps paging correct when the before_id item is deleted', async () => {
    const a = (await t.api('POST', '/ip_policies', {})).body.id as string;
    const b = (await t.api('POST', '/ip_policies', {})).body.id as string;
    await t.api('DELETE', `/ip_policies/${b}`);
    const page = await t.api<{ ip_policies: Array<{ id: string }> }>(
      'GET',
      `/ip_policies?before_id=${b}&limit=1`,
    );
    expect(page.body.ip_policies[0]?.id).toBe(a);
  });

  it('400s a before_id that is not an id of the list, naming it, on every kind of list', async () => {
    const policy = (await t.api('POST', '/ip_policies', {})).body.id as string;
    const edge = (await t.api('POST', '/edges/https', {})).body.id as string;
    const credential = (await t.api('POST', '/credentials', {})).body.id as string;
    const lists: Array<[string, string]> = [
      ['/ip_policies', 'ipp_'],
      [`/ip_policy_rules?ip_policy_id=${policy}`, 'ipr_'],
      [`/edges/https/${edge}/routes`, 'edghtsrt_'],
      ['/tunnel_sessions', 'ts_'],
    ];
    // Each would sort before or after every id of the list: an empty or a whole page, as if that were it.
    const notIds = ['zzz', '0', 'ipp', 'ipp_', 'ipp_a.b', credential, edge];
    for (const [list, prefix] of lists) {
      for (const beforeId of notIds) {
        const separator = list.includes('?') ? '&' : '?';
        const url = `${list}${separator}before_id=${encodeURIComponent(beforeId)}`;
        const response = await t.api('GET', url);
        expect(response.status, url).toBe(400);
        expect(response.body, url).toMatchObject({
          error_code: 'ERR_EDGEWARD_100',
          msg: `before_id: must be an id of this list (${prefix} and letters or digits)`,
        });
      }
    }
    // An id of the list is a place in it, whether or not its item still exists.
    const page = await t.api<{ ip_policies: Array<{ id: string }> }>(
      'GET',
      `/ip_policies?before_id=ipp_${'z'.repeat(27)}&limit=1`,
    );
    expect(page.status).toBe(200);
    expect(page.body.ip_policies.map((item) => item.id)).toEqual([policy]);
  });

  it('400s limits outside 1..100 and unknown query parameters, naming them', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5']) {
      const response = await t.api('GET', `/ip_policies?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.msg).toMatch(/^limit: /);
    }
    const unknown = await t.api('GET', '/ip_policies?page=2');
    expect(unknown.status).toBe(400);
    expect(unknown.body.msg).toBe('page: unknown field');
  });
});

describe('rate limiting', () => {
  it('429s past the per-key budget with Retry-After, and never limits probes', async () => {
    const limited = await startTestServer({ rateLimitPerMinute: 3 });
    try {
      for (let i = 0; i < 3; i++) expect((await limited.api('GET', '/ip_policies')).status).toBe(200);
      const refused = await limited.api('GET', '/ip_policies');
      expect(refused.status).toBe(429);
      expectErrorShape(refused);
      expect(refused.body).toMatchObject({ error_code: 'ERR_EDGEWARD_700' });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await limited.api('GET', '/healthz', undefined, { key: null, version: null })).status).toBe(
        200,
      );
    } finally {
      await limited.stop();
    }
  });
});

describe('public endpoints', () => {
  it('serves probes without a key', async () => {
    expect((await t.api('GET', '/healthz', undefined, { key: null, version: null })).status).toBe(200);
    expect((await t.api('GET', '/readyz', undefined, { key: null, version: null })).status).toBe(200);
  });
});
