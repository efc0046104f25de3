import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgewardClient } from '../../src/client/index.js';
import { rfc3339 } from '../../src/lib/rfc3339.js';
import { eventsOf } from '../support/events.js';
import { countRows, walkPages } from '../support/paging.js';
import { ADMIN_KEY, idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

interface CertJobWire {
  error_code?: string;
  msg: string;
  started_at: string;
  retries_at: string;
}
interface AgentIngressWire {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata?: string;
  domain: string;
  ns_targets: string[];
  region_domains: string[];
  certificate_management_policy: { authority: string; private_key_type: string } | null;
  certificate_management_status: { renews_at: string; provisioning_job: CertJobWire | null } | null;
}
interface AgentIngressListWire {
  ingresses: AgentIngressWire[];
  uri: string;
  next_page_uri: string | null;
}

const REGIONS = ['au', 'eu', 'ap', 'us', 'jp', 'in', 'sa'];
const KEYS_WITHOUT_METADATA = [
  'certificate_management_policy',
  'certificate_management_status',
  'created_at',
  'description',
  'domain',
  'id',
  'ns_targets',
  'region_domains',
  'uri',
];
const KEYS_WITH_METADATA = [...KEYS_WITHOUT_METADATA, 'metadata'].sort();
const NAMESERVER = /^ns([1-9]|1[0-6])\.edgeward-dns\.net$/;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

let domainCounter = 0;
/** A domain no other test uses, so tests do not collide on the uniqueness of domains. */
function freshDomain(stem = 'example.com'): string {
  domainCounter++;
  return `t${Date.now().toString(36)}-${domainCounter}.${stem}`;
}

async function create(body: Record<string, unknown>, server: TestServer = t): Promise<AgentIngressWire> {
  const created = await server.api<AgentIngressWire>('POST', '/agent_ingresses', body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

async function get(id: string, server: TestServer = t): Promise<AgentIngressWire> {
  const fetched = await server.api<AgentIngressWire>('GET', `/agent_ingresses/${id}`);
  expect(fetched.status).toBe(200);
  return fetched.body;
}

function nameserverNumbers(targets: string[]): number[] {
  return targets.map((target) => Number(NAMESERVER.exec(target)?.[1]));
}

/** Asserts the pending-provisioning status of a policy set at some time within [from, to]. */
function expectPendingStatus(ingress: AgentIngressWire, from: string, to: string): CertJobWire {
  const status = ingress.certificate_management_status;
  expect(status).not.toBeNull();
  expect(Object.keys(status ?? {}).sort()).toEqual(['provisioning_job', 'renews_at']);
  const job = status?.provisioning_job as CertJobWire;
  expect(Object.keys(job).sort()).toEqual(['msg', 'retries_at', 'started_at']);
  expect(job.started_at).toMatch(RFC3339_UTC);
  expect(job.retries_at).toMatch(RFC3339_UTC);
  expect(Date.parse(job.started_at)).toBeGreaterThanOrEqual(Date.parse(from));
  expect(Date.parse(job.started_at)).toBeLessThanOrEqual(Date.parse(to));
  expect(Date.parse(job.retries_at) - Date.parse(job.started_at)).toBe(60 * 60 * 1000);
  expect(status?.renews_at).toBe(job.started_at);
  expect(job.msg).toContain(ingress.domain);
  for (const target of ingress.ns_targets) expect(job.msg).toContain(target);
  return job;
}

describe('agent ingresses', () => {
  it('creates, reads, updates, lists and deletes with the wire shape of the spec', async () => {
    const domain = freshDomain();
    const created = await t.api<AgentIngressWire>('POST', '/agent_ingresses', {
      domain,
      description: 'agents of the EU fleet',
      metadata: '{"team":"infra"}',
    });
    expect(created.status).toBe(201);
    const ingress = created.body;
    expect(Object.keys(ingress).sort()).toEqual(KEYS_WITH_METADATA);
    expect(ingress.id).toMatch(idPattern('agin'));
    // Unlike every other resource, the spec shows a relative uri.
    expect(ingress.uri).toBe(`/agent_ingresses/${ingress.id}`);
    expect(ingress.created_at).toMatch(RFC3339_UTC);
    expect(ingress.description).toBe('agents of the EU fleet');
    expect(ingress.metadata).toBe('{"team":"infra"}');
    expect(ingress.domain).toBe(domain);
    expect(ingress.ns_targets).toHaveLength(4);
    for (const target of ingress.ns_targets) expect(target).toMatch(NAMESERVER);
    const numbers = nameserverNumbers(ingress.ns_targets);
    expect(new Set(numbers).size).toBe(4);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(ingress.region_domains).toEqual(REGIONS.map((region) => `tunnel.${region}.${domain}`));
    expect(ingress.certificate_management_policy).toBeNull();
    expect(ingress.certificate_management_status).toBeNull();
    expect(created.headers.get('svc-operation-id')).toMatch(/^op_/);

    expect(await get(ingress.id)).toEqual(ingress);

    const patched = await t.api<AgentIngressWire>('PATCH', `/agent_ingresses/${ingress.id}`, {
      description: 'agents',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...ingress, description: 'agents' });

    const listed = await t.api<AgentIngressListWire>('GET', '/agent_ingresses');
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body).sort()).toEqual(['ingresses', 'next_page_uri', 'uri']);
    expect(listed.body.uri).toBe(`${t.baseUrl}/agent_ingresses`);
    expect(listed.body.next_page_uri).toBeNull();
    expect(listed.body.ingresses).toContainEqual(patched.body);

    const deleted = await t.api('DELETE', `/agent_ingresses/${ingress.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await t.api('GET', `/agent_ingresses/${ingress.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
  });

  it('leaves metadata out of responses while unset, and description as ""', async () => {
    const ingress = await create({ domain: freshDomain() });
    expect(Object.keys(ingress).sort()).toEqual(KEYS_WITHOUT_METADATA);
    expect(ingress.description).toBe('');
    expect(Object.keys(await get(ingress.id)).sort()).toEqual(KEYS_WITHOUT_METADATA);

    const set = await t.api<AgentIngressWire>('PATCH', `/agent_ingresses/${ingress.id}`, { metadata: 'm' });
    expect(Object.keys(set.body).sort()).toEqual(KEYS_WITH_METADATA);
    expect(set.body.metadata).toBe('m');
    const listed = await t.api<AgentIngressListWire>('GET', '/agent_ingresses');
    expect(listed.body.ingresses.find((item) => item.id === ingress.id)?.metadata).toBe('m');

    const unset = await t.api<AgentIngressWire>('PATCH', `/agent_ingresses/${ingress.id}`, { metadata: '' });
    expect(Object.keys(unset.body).sort()).toEqual(KEYS_WITHOUT_METADATA);
    expect(unset.text).not.toContain('"metadata"');
    const explicitEmpty = await create({ domain: freshDomain(), metadata: '' });
    expect(Object.keys(explicitEmpty).sort()).toEqual(KEYS_WITHOUT_METADATA);
  });

  it('derives ns_targets and region_domains stably: get, list, restart, delete and another server', async () => {
    const domain = freshDomain('stable.example.org');
    const ingress = await create({ domain });
    expect(await get(ingress.id)).toEqual(ingress);
    const listed = await t.api<AgentIngressListWire>('GET', '/agent_ingresses');
    expect(listed.body.ingresses.find((item) => item.id === ingress.id)).toEqual(ingress);

    await t.restart();
    expect(await get(ingress.id)).toEqual(ingress);

    // The same domain created again (after a delete) and on a separate server gets the same names.
    expect((await t.api('DELETE', `/agent_ingresses/${ingress.id}`)).status).toBe(204);
    const again = await create({ domain });
    expect(again.id).not.toBe(ingress.id);
    expect(again.ns_targets).toEqual(ingress.ns_targets);
    expect(again.region_domains).toEqual(ingress.region_domains);
    const other = await startTestServer();
    try {
      const elsewhere = await create({ domain }, other);
      expect(elsewhere.ns_targets).toEqual(ingress.ns_targets);
      expect(elsewhere.region_domains).toEqual(ingress.region_domains);
    } finally {
      await other.stop();
    }
  });

  it('spreads domains over the nameserver pool', async () => {
    const sets = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const ingress = await create({ domain: freshDomain('spread.example.net') });
      expect(new Set(ingress.ns_targets).size).toBe(4);
      sets.add(ingress.ns_targets.join(','));
    }
    // 1820 possible sets: twelve domains landing on only one or two would mean no hashing at all.
    expect(sets.size).toBeGreaterThan(2);
  });

  it('defaults the certificate policy and shows a pending provisioning job while it is set', async () => {
    for (const [policy, expected] of [
      [{}, { authority: 'letsencrypt', private_key_type: 'rsa' }],
      [{ authority: 'letsencrypt' }, { authority: 'letsencrypt', private_key_type: 'rsa' }],
      [{ private_key_type: 'ecdsa' }, { authority: 'letsencrypt', private_key_type: 'ecdsa' }],
      [
        { authority: 'letsencrypt', private_key_type: 'rsa' },
        { authority: 'letsencrypt', private_key_type: 'rsa' },
      ],
    ] as const) {
      const before = rfc3339();
      const ingress = await create({ domain: freshDomain(), certificate_management_policy: policy });
      const after = rfc3339();
      expect(ingress.certificate_management_policy, JSON.stringify(policy)).toEqual(expected);
      expectPendingStatus(ingress, before, after);
      expect(await get(ingress.id)).toEqual(ingress);
    }
    for (const body of [{ certificate_management_policy: null }, {}]) {
      const ingress = await create({ ...body, domain: freshDomain() });
      expect(ingress.certificate_management_policy).toBeNull();
      expect(ingress.certificate_management_status).toBeNull();
    }
  });

  it('sets, keeps, changes and disables the policy through PATCH', async () => {
    const ingress = await create({ domain: freshDomain() });
    const before = rfc3339();
    const enabled = await t.api<AgentIngressWire>('PATCH', `/agent_ingresses/${ingress.id}`, {
      certificate_management_policy: { private_key_type: 'ecdsa' },
    });
    expect(enabled.status).toBe(200);
    expect(enabled.body.certificate_management_policy).toEqual({
      authority: 'letsencrypt',
      private_key_type: 'ecdsa',
    });
    expectPendingStatus(enabled.body, before, rfc3339());
    expect(enabled.body.ns_targets).toEqual(ingress.ns_targets);
    expect(enabled.body.domain).toBe(ingress.domain);

    // Backdate the job, so that "kept" and "restarted" can be told apart within one second.
    const oldStart = '2020-01-01T00:00:00Z';
    const oldStatus = {
      renews_at: oldStart,
      provisioning_job: { msg: 'old', started_at: oldStart, retries_at: '2020-01-01T01:00:00Z' },
    };
    await t.server.app.edgeward.db
      .updateTable('agent_ingresses')
      .set({ certificate_management_status: JSON.stringify(oldStatus) })
      .where('id', '=', ingress.id)
      .execute();

    const untouched = await t.api<AgentIngressWire>('PATCH', `/agent_ingresses/${ingress.id}`, {
      description: 'only the description',
    });
    expect(untouched.body.certificate_management_status).toEqual(oldStatus);
    const resent = await t.api<AgentIngressWire>('PATCH', `/agent_ingresses/${ingress.id}`, {
      certificate_management_policy: { authority: 'letsencrypt', private_key_type: 'ecdsa' },
    });
    expect(resent.status).toBe(200);
    expect(resent.body.certificate_management_status).toEqual(oldStatus);

    const changedAt = rfc3339();
    const changed = await t.api<AgentIngressWire>('PATCH', `/agent_ingresses/${ingress.id}`, {
      certificate_management_policy: {},
    });
    expect(changed.body.certificate_management_policy).toEqual({
      authority: 'letsencrypt',
      private_key_type: 'rsa',
    });
    expectPendingStatus(changed.body, changedAt, rfc3339());

    const disabled = await t.api<AgentIngressWire>('PATCH', `/agent_ingresses/${ingress.id}`, {
      certificate_management_policy: null,
    });
    expect(disabled.status).toBe(200);
    expect(disabled.body.certificate_management_policy).toBeNull();
    expect(disabled.body.certificate_management_status).toBeNull();
    expect(disabled.body.description).toBe('only the description');
    expect(await get(ingress.id)).toEqual(disabled.body);
  });

  it('rejects domains that are not DNS names the caller could own, naming domain', async () => {
    const longLabel = 'a'.repeat(64);
    for (const [domain, message] of [
      ['', /^domain: must be a DNS name/],
      ['com', /^domain: must have at least two labels/],
      ['*.example.com', /^domain: must not be a wildcard/],
      ['example.com.', /^domain: must not end with a dot/],
      ['Example.com', /^domain: must be lowercase/],
      ['exa_mple.com', /^domain: label 'exa_mple' may contain only lowercase letters, digits and hyphens/],
      ['ex ample.com', /^domain: label 'ex ample' may contain only/],
      ['exämple.com', /^domain: label 'exämple' may contain only/],
      ['-example.com', /^domain: label '-example' must not start or end with a hyphen/],
      ['example-.com', /^domain: label 'example-' must not start or end with a hyphen/],
      ['example..com', /^domain: must not contain an empty label/],
      ['.example.com', /^domain: must not contain an empty label/],
      [`${longLabel}.com`, /^domain: label 'a{64}' is longer than 63 characters/],
      ['192.0.2.10', /^domain: must be a DNS name, not an IP address/],
      // 244 characters: one more than the longest accepted below.
      [
        `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(48)}.com`,
        /^domain: must be at most 243 characters/,
      ],
      [7, /^domain: must be a string, got number/],
      [null, /^domain: must be a string, got null/],
    ] as const) {
      const response = await t.api('POST', '/agent_ingresses', { domain });
      expect(response.status, String(domain)).toBe(400);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_100', status_code: 400 });
      expect(response.body.msg, String(domain)).toMatch(message);
    }
    const missing = await t.api('POST', '/agent_ingresses', { description: 'no domain' });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toBe('domain: is required');
  });

  it('accepts domains at the limits', async () => {
    // 243 characters: the longest whose regional domains (tunnel.<region>.<domain>) fit in 253.
    const longest = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(47)}.com`;
    expect(longest).toHaveLength(243);
    const atLimit = await create({ domain: longest });
    for (const regional of atLimit.region_domains) expect(regional.length).toBeLessThanOrEqual(253);
    for (const domain of [
      `${'x'.repeat(63)}.${freshDomain()}`,
      `xn--bcher-kva.${freshDomain()}`,
      `123.${freshDomain()}`,
      `a-b--c.${freshDomain()}`,
    ]) {
      expect((await create({ domain })).domain).toBe(domain);
    }
  });

  it('validates the policy, limits and unknown fields on create and update, naming the field', async () => {
    const domain = freshDomain();
    const bodies = [
      [
        { certificate_management_policy: { authority: 'zerossl' } },
        /^certificate_management_policy\.authority: must be one of "letsencrypt"/,
      ],
      [{ certificate_management_policy: { authority: '' } }, /^certificate_management_policy\.authority: /],
      [
        { certificate_management_policy: { private_key_type: 'ed25519' } },
        /^certificate_management_policy\.private_key_type: must be one of "rsa", "ecdsa"/,
      ],
      [
        { certificate_management_policy: { key: 'rsa' } },
        /^certificate_management_policy\.key: unknown field/,
      ],
      [{ certificate_management_policy: 'letsencrypt' }, /^certificate_management_policy: must be an object/],
      [{ description: 'é'.repeat(128) }, /^description: must be at most 255 bytes/],
      [{ metadata: 'x'.repeat(4097) }, /^metadata: must be at most 4096 bytes/],
      [{ ns_targets: ['ns1.example.net'] }, /^ns_targets: unknown field/],
      [{ region_domains: [] }, /^region_domains: unknown field/],
    ] as const;
    for (const [body, message] of bodies) {
      const response = await t.api('POST', '/agent_ingresses', { domain, ...body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg, JSON.stringify(body)).toMatch(message);
    }
    // Nothing was created by the rejected requests.
    expect((await t.api('POST', '/agent_ingresses', { domain })).status).toBe(201);

    const ingress = await create({ domain: freshDomain(), description: 'kept' });
    for (const [body, message] of [
      ...bodies,
      [{ domain: freshDomain() }, /^domain: unknown field/],
    ] as const) {
      const response = await t.api('PATCH', `/agent_ingresses/${ingress.id}`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg, JSON.stringify(body)).toMatch(message);
    }
    expect(await get(ingress.id)).toEqual(ingress);

    const atLimit = await create({
      domain: freshDomain(),
      description: 'x'.repeat(255),
      metadata: 'é'.repeat(2048),
    });
    expect(atLimit.metadata).toBe('é'.repeat(2048));
  });

  it('refuses a second agent ingress on the same domain with 409, until the first is deleted', async () => {
    const domain = freshDomain();
    const first = await create({ domain });
    const duplicate = await t.api('POST', '/agent_ingresses', { domain, description: 'again' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toMatchObject({ error_code: 'ERR_EDGEWARD_501', status_code: 409 });
    expect(duplicate.body.msg).toBe(`domain: ${domain} is already an agent ingress (${first.id})`);
    const rows = await t.server.app.edgeward.db
      .selectFrom('agent_ingresses')
      .select('id')
      .where('domain', '=', domain)
      .execute();
    expect(rows.map((row) => row.id)).toEqual([first.id]);

    expect((await t.api('DELETE', `/agent_ingresses/${first.id}`)).status).toBe(204);
    expect((await create({ domain })).domain).toBe(domain);
  });

  it('lets exactly one of several concurrent creates on one domain win', async () => {
    const domain = freshDomain('race.example.com');
    const responses = await Promise.all(
      Array.from({ length: 6 }, () => t.api<AgentIngressWire>('POST', '/agent_ingresses', { domain })),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
    const winner = responses.find((response) => response.status === 201)?.body as AgentIngressWire;
    for (const loser of responses.filter((response) => response.status === 409)) {
      expect(loser.body).toMatchObject({
        error_code: 'ERR_EDGEWARD_501',
        msg: `domain: ${domain} is already an agent ingress (${winner.id})`,
      });
    }
  });

  it('answers 404 for unknown ids', async () => {
    const unknown = 'agin_2aaaaaaaaaaaaaaaaaaaaaaaaaa';
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { description: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await t.api(method, `/agent_ingresses/${unknown}`, body);
      expect(response.status, method).toBe(404);
      expect(response.body.msg).toContain(unknown);
    }
  });

  it('pages the list newest first with absolute next_page_uri', async () => {
    const older = await create({ domain: freshDomain() });
    const newer = await create({ domain: freshDomain() });
    const page = await t.api<AgentIngressListWire>('GET', '/agent_ingresses?limit=1');
    expect(page.status).toBe(200);
    expect(page.body.ingresses.map((item) => item.id)).toEqual([newer.id]);
    expect(page.body.next_page_uri).toBe(`${t.baseUrl}/agent_ingresses?before_id=${newer.id}&limit=1`);
    const next = await t.api<AgentIngressListWire>('GET', page.body.next_page_uri as string);
    expect(next.body.ingresses.map((item) => item.id)).toEqual([older.id]);

    const { seen } = await walkPages<AgentIngressListWire>(
      t,
      '/agent_ingresses?limit=3',
      'ingresses',
      (p) => {
        expect(p.body.ingresses.length).toBeLessThanOrEqual(3);
      },
    );
    expect(seen.length).toBe(await countRows(t, 'agent_ingresses'));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort().reverse());
    const badLimit = await t.api('GET', '/agent_ingresses?limit=101');
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.msg).toMatch(/^limit: /);
  });

  it('replays an idempotent create and records created, updated and deleted events', async () => {
    const domain = freshDomain();
    const headers = { 'Idempotency-Key': `agin-${domain}` };
    const body = { domain, certificate_management_policy: {} };
    const first = await t.api<AgentIngressWire>('POST', '/agent_ingresses', body, { headers });
    const second = await t.api<AgentIngressWire>('POST', '/agent_ingresses', body, { headers });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');

    const id = first.body.id;
    await t.api('PATCH', `/agent_ingresses/${id}`, { certificate_management_policy: null });
    await t.api('DELETE', `/agent_ingresses/${id}`);
    const events = await eventsOf(t, id);
    expect(events.map((event) => event.type)).toEqual([
      'agent_ingress_created.v0',
      'agent_ingress_updated.v0',
      'agent_ingress_deleted.v0',
    ]);
    expect(JSON.parse(events[0]?.payload ?? '{}')).toEqual({ object: first.body });
    expect(JSON.parse(events[1]?.payload ?? '{}').object).toMatchObject({
      id,
      certificate_management_policy: null,
      certificate_management_status: null,
    });
    expect(JSON.parse(events[2]?.payload ?? '{}')).toEqual({ object: { id } });
  });

  it('is reachable through the typed client', async () => {
    const client = new EdgewardClient({ baseUrl: t.baseUrl, apiKey: ADMIN_KEY });
    try {
      const domain = freshDomain();
      const created = await client.agentIngresses.create({
        domain,
        certificate_management_policy: { private_key_type: 'ecdsa' },
      });
      expect(created.uri).toBe(`/agent_ingresses/${created.id}`);
      expect(created.certificate_management_policy?.private_key_type).toBe('ecdsa');
      const updated = await client.agentIngresses.update(created.id, { metadata: 'client' });
      expect(updated.metadata).toBe('client');
      const ids: string[] = [];
      for await (const item of client.agentIngresses.iterate({ limit: 2 })) ids.push(item.id);
      expect(ids).toContain(created.id);
      await client.agentIngresses.delete(created.id);
      await expect(client.agentIngresses.get(created.id)).rejects.toMatchObject({
        statusCode: 404,
        errorCode: 'ERR_EDGEWARD_400',
      });
    } finally {
      await client.close();
    }
  });
});
