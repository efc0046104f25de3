import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsOf, eventTypesOf } from '../support/events.js';
import { idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

describe('IP policies', () => {
  it('creates, reads, updates, lists and deletes with the wire shape of the spec', async () => {
    const created = await t.api('POST', '/ip_policies', {
      description: 'office',
      metadata: '{"team":"net"}',
    });
    expect(created.status).toBe(201);
    const policy = created.body;
    expect(Object.keys(policy).sort()).toEqual(['created_at', 'description', 'id', 'metadata', 'uri']);
    expect(policy.id).toMatch(idPattern('ipp'));
    expect(policy.uri).toBe(`${t.baseUrl}/ip_policies/${policy.id}`);
    expect(policy.created_at).toMatch(RFC3339_UTC);
    expect(policy.description).toBe('office');
    expect(policy.metadata).toBe('{"team":"net"}');
    expect(created.headers.get('svc-operation-id')).toMatch(/^op_/);

    const fetched = await t.api('GET', `/ip_policies/${policy.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(policy);

    const patched = await t.api('PATCH', `/ip_policies/${policy.id}`, { description: 'hq' });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...policy, description: 'hq' });

    const listed = await t.api<{ ip_policies: unknown[]; uri: string; next_page_uri: null }>(
      'GET',
      '/ip_policies',
    );
    expect(listed.status).toBe(200);
    expect(listed.body.uri).toBe(`${t.baseUrl}/ip_policies`);
    expect(listed.body.next_page_uri).toBeNull();
    expect(listed.body.ip_policies).toContainEqual({ ...policy, description: 'hq' });

    const deleted = await t.api('DELETE', `/ip_policies/${policy.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await t.api('GET', `/ip_policies/${policy.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
  });

  it('creates with no body and defaults description and metadata to empty strings', async () => {
    const created = await t.api('POST', '/ip_policies', {});
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ description: '', metadata: '' });
  });

  it('rejects a description over 255 bytes and metadata over 4096 bytes, naming the field', async () => {
    const multiByte = 'é'.repeat(128); // 256 bytes, 128 characters
    const description = await t.api('POST', '/ip_policies', { description: multiByte });
    expect(description.status).toBe(400);
    expect(description.body.msg).toMatch(/^description: must be at most 255 bytes/);
    expect((await t.api('POST', '/ip_policies', { description: 'x'.repeat(255) })).status).toBe(201);
    const metadata = await t.api('POST', '/ip_policies', { metadata: 'x'.repeat(4097) });
    expect(metadata.status).toBe(400);
    expect(metadata.body.msg).toMatch(/^metadata: /);
  });
});

describe('IP policy rules', () => {
  it('creates a rule that refers to its policy and validates cidr and action', async () => {
    const policy = (await t.api('POST', '/ip_policies', {})).body;
    const created = await t.api('POST', '/ip_policy_rules', {
      ip_policy_id: policy.id,
      cidr: '203.0.113.0/24',
      action: 'allow',
      description: 'office v4',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      cidr: '203.0.113.0/24',
      action: 'allow',
      description: 'office v4',
      metadata: '',
      ip_policy: { id: policy.id, uri: policy.uri },
    });
    expect(created.body.id).toMatch(idPattern('ipr'));
    expect(created.body.uri).toBe(`${t.baseUrl}/ip_policy_rules/${created.body.id}`);

    const v6 = await t.api('POST', '/ip_policy_rules', {
      ip_policy_id: policy.id,
      cidr: '2001:db8::/32',
      action: 'deny',
    });
    expect(v6.status).toBe(201);

    for (const [cidr, message] of [
      ['203.0.113.0', /cidr: must be in CIDR notation/],
      ['203.0.113.7/24', /cidr: has host bits set/],
      ['300.0.0.0/8', /cidr: '300.0.0.0' is not an IPv4/],
      ['10.0.0.0/33', /cidr: prefix length must be 0..32/],
    ] as const) {
      const bad = await t.api('POST', '/ip_policy_rules', { ip_policy_id: policy.id, cidr, action: 'allow' });
      expect(bad.status, cidr).toBe(400);
      expect(bad.body.msg).toMatch(message);
    }
    const badAction = await t.api('POST', '/ip_policy_rules', {
      ip_policy_id: policy.id,
      cidr: '10.0.0.0/8',
      action: 'block',
    });
    expect(badAction.status).toBe(400);
    expect(badAction.body.msg).toMatch(/^action: must be one of "allow", "deny"/);

    const missingPolicy = await t.api('POST', '/ip_policy_rules', {
      ip_policy_id: 'ipp_doesnotexist00000000000000',
      cidr: '10.0.0.0/8',
      action: 'allow',
    });
    expect(missingPolicy.status).toBe(400);
    expect(missingPolicy.body).toMatchObject({ error_code: 'ERR_EDGEWARD_103' });
    expect(missingPolicy.body.msg).toMatch(/^ip_policy_id: no IP policy/);

    const patched = await t.api('PATCH', `/ip_policy_rules/${created.body.id}`, {
      cidr: '198.51.100.0/24',
      action: 'deny',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ cidr: '198.51.100.0/24', action: 'deny', description: 'office v4' });
  });

  it('lists the rules of one policy with ?ip_policy_id=, keeping the filter in next_page_uri', async () => {
    const mine = (await t.api<{ id: string }>('POST', '/ip_policies', {})).body;
    const other = (await t.api<{ id: string }>('POST', '/ip_policies', {})).body;
    const cidrs = ['10.1.0.0/16', '10.2.0.0/16', '10.3.0.0/16'];
    for (const cidr of cidrs) {
      await t.api('POST', '/ip_policy_rules', { ip_policy_id: mine.id, cidr, action: 'allow' });
    }
    await t.api('POST', '/ip_policy_rules', { ip_policy_id: other.id, cidr: '10.9.0.0/16', action: 'deny' });

    type RulePage = {
      ip_policy_rules: { cidr: string; ip_policy: { id: string } }[];
      next_page_uri: string | null;
    };
    const first = await t.api<RulePage>('GET', `/ip_policy_rules?ip_policy_id=${mine.id}&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.ip_policy_rules.map((rule) => rule.ip_policy.id)).toEqual([mine.id, mine.id]);
    const next = new URL(first.body.next_page_uri ?? '');
    expect(next.searchParams.get('ip_policy_id')).toBe(mine.id);
    const second = await t.api<RulePage>('GET', `${next.pathname}${next.search}`);
    const all = [...first.body.ip_policy_rules, ...second.body.ip_policy_rules].map((rule) => rule.cidr);
    expect(all.sort()).toEqual(cidrs);
    expect(second.body.next_page_uri).toBeNull();

    const none = await t.api<RulePage>('GET', '/ip_policy_rules?ip_policy_id=ipp_unknown');
    expect(none.body.ip_policy_rules).toEqual([]);
    const empty = await t.api<{ msg: string }>('GET', '/ip_policy_rules?ip_policy_id=');
    expect(empty.status).toBe(400);
    expect(empty.body.msg).toMatch(/ip_policy_id/);
  });

  it('deleting a policy removes its rules', async () => {
    const policy = (await t.api<{ id: string }>('POST', '/ip_policies', {})).body;
    const rule = (
      await t.api<{ id: string }>('POST', '/ip_policy_rules', {
        ip_policy_id: policy.id,
        cidr: '10.0.0.0/8',
        action: 'allow',
      })
    ).body;
    const second = (
      await t.api<{ id: string }>('POST', '/ip_policy_rules', {
        ip_policy_id: policy.id,
        cidr: '192.0.2.0/24',
        action: 'deny',
      })
    ).body;
    const otherPolicy = (await t.api<{ id: string }>('POST', '/ip_policies', {})).body;
    const unrelated = (
      await t.api<{ id: string }>('POST', '/ip_policy_rules', {
        ip_policy_id: otherPolicy.id,
        cidr: '10.0.0.0/8',
        action: 'allow',
      })
    ).body;
    expect((await t.api('DELETE', `/ip_policies/${policy.id}`)).status).toBe(204);
    expect((await t.api('GET', `/ip_policy_rules/${rule.id}`)).status).toBe(404);
    expect((await t.api('GET', `/ip_policy_rules/${second.id}`)).status).toBe(404);
    expect((await t.api('GET', `/ip_policy_rules/${unrelated.id}`)).status).toBe(200);

    // Each removed rule is reported as deleted, like a DELETE of the rule itself.
    for (const id of [rule.id, second.id]) {
      const events = await eventsOf(t, id);
      expect(events.map((event) => event.type)).toEqual([
        'ip_policy_rule_created.v0',
        'ip_policy_rule_deleted.v0',
      ]);
      expect(JSON.parse(events[1]?.payload ?? '')).toEqual({ object: { id } });
    }
    expect(await eventTypesOf(t, policy.id)).toEqual(['ip_policy_created.v0', 'ip_policy_deleted.v0']);
    expect(await eventTypesOf(t, unrelated.id)).toEqual(['ip_policy_rule_created.v0']);
  });
});
