import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectModuleRoundTrips } from '../support/edge-modules.js';
import { insertEdgeReferences } from '../support/edge-references.js';
import { eventsOf } from '../support/events.js';
import { countRows, walkPages } from '../support/paging.js';
import { idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let backendId: string;
let policyId: string;
let caId: string;
let hostCounter = 0;
const nextHost = () => `app${++hostCounter}.example.com:443`;

beforeAll(async () => {
  t = await startTestServer();
  policyId = (await t.api('POST', '/ip_policies', {})).body.id as string;
  ({ backendId, caId } = await insertEdgeReferences(t, '1'));
});
afterAll(async () => t.stop());

const EDGE_KEYS = [
  'backend',
  'created_at',
  'description',
  'hostports',
  'id',
  'ip_restriction',
  'metadata',
  'mutual_tls',
  'policy',
  'tls_termination',
  'uri',
];

describe('TLS edges', () => {
  it('creates an edge with every module and shows them in read form', async () => {
    const hostport = nextHost();
    const created = await t.api('POST', '/edges/tls', {
      description: 'db proxy',
      metadata: '{"team":"data"}',
      hostports: [hostport],
      backend: { backend_id: backendId },
      ip_restriction: { enabled: false, ip_policy_ids: [policyId] },
      mutual_tls: { certificate_authority_ids: [caId] },
      tls_termination: { terminate_at: 'edge', min_version: '1.3' },
      policy: {
        inbound: [
          {
            name: 'block-probe',
            expressions: ["conn.client_ip == '192.0.2.1'"],
            actions: [{ type: 'deny' }],
          },
        ],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const edge = created.body;
    expect(Object.keys(edge).sort()).toEqual(EDGE_KEYS);
    expect(edge.id).toMatch(idPattern('edgtls'));
    expect(edge.uri).toBe(`${t.baseUrl}/edges/tls/${edge.id}`);
    expect(edge.created_at).toMatch(RFC3339_UTC);
    expect(edge.hostports).toEqual([hostport]);
    expect(edge.backend).toEqual({
      enabled: true,
      backend: { id: backendId, uri: `${t.baseUrl}/backends/tunnel_group/${backendId}` },
    });
    expect(edge.ip_restriction).toEqual({
      enabled: false,
      ip_policies: [{ id: policyId, uri: `${t.baseUrl}/ip_policies/${policyId}` }],
    });
    expect(edge.mutual_tls).toEqual({
      enabled: true,
      certificate_authorities: [{ id: caId, uri: `${t.baseUrl}/certificate_authorities/${caId}` }],
    });
    expect(edge.tls_termination).toEqual({ enabled: true, terminate_at: 'edge', min_version: '1.3' });
    expect(edge.policy).toEqual({
      enabled: true,
      inbound: [
        {
          name: 'block-probe',
          expressions: ["conn.client_ip == '192.0.2.1'"],
          actions: [{ type: 'deny', config: null }],
        },
      ],
      outbound: null,
    });
    expect((await t.api('GET', `/edges/tls/${edge.id}`)).body).toEqual(edge);
  });

  it('creates a bare edge with every module null', async () => {
    const edge = (await t.api('POST', '/edges/tls', {})).body;
    expect(edge).toMatchObject({
      hostports: [],
      backend: null,
      ip_restriction: null,
      mutual_tls: null,
      tls_termination: null,
      policy: null,
      description: '',
      metadata: '',
    });
  });

  it('updates: absent modules unchanged, present ones replaced completely, removal refused', async () => {
    const edge = (
      await t.api('POST', '/edges/tls', {
        hostports: [nextHost()],
        backend: { backend_id: backendId },
        tls_termination: { min_version: '1.3' },
      })
    ).body;
    const updated = await t.api('PATCH', `/edges/tls/${edge.id}`, {
      description: 'now restricted',
      tls_termination: { terminate_at: 'upstream' },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.backend).toEqual(edge.backend);
    expect(updated.body.tls_termination).toEqual({
      enabled: true,
      terminate_at: 'upstream',
      min_version: null,
    });
    expect(updated.body.description).toBe('now restricted');
    const removal = await t.api('PATCH', `/edges/tls/${edge.id}`, { backend: null });
    expect(removal.status).toBe(400);
    expect(removal.body.msg).toMatch(/^backend: a module cannot be removed through an update/);
    expect((await t.api('GET', `/edges/tls/${edge.id}`)).body.backend).toEqual(edge.backend);
  });

  it('defaults min_version to a safe 1.2 at the edge and refuses one when terminating upstream', async () => {
    const edge = (await t.api('POST', '/edges/tls', { tls_termination: {} })).body;
    expect(edge.tls_termination).toEqual({ enabled: true, terminate_at: 'edge', min_version: '1.2' });
    const bad = await t.api('POST', '/edges/tls', {
      tls_termination: { terminate_at: 'upstream', min_version: '1.2' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toBe("tls_termination.min_version: must be null when terminate_at is 'upstream'");
    const badVersion = await t.api('POST', '/edges/tls', { tls_termination: { min_version: '1.4' } });
    expect(badVersion.status).toBe(400);
    expect(badVersion.body.msg).toMatch(/^tls_termination\.min_version: must be one of/);
  });

  it('refuses references to ids that do not exist, naming the field', async () => {
    const cases = [
      [{ backend: { backend_id: 'bkdtg_missing' } }, /^backend\.backend_id: no tunnel-group backend/],
      [
        { ip_restriction: { ip_policy_ids: [policyId, 'ipp_missing'] } },
        /^ip_restriction\.ip_policy_ids\[1\]: no IP policy/,
      ],
      [
        { mutual_tls: { certificate_authority_ids: ['ca_missing'] } },
        /^mutual_tls\.certificate_authority_ids\[0\]: no certificate authority/,
      ],
      [
        { ip_restriction: { ip_policy_ids: [policyId, policyId] } },
        /^ip_restriction\.ip_policy_ids\[1\]: '.*' is listed twice/,
      ],
    ] as const;
    for (const [body, message] of cases) {
      const response = await t.api('POST', '/edges/tls', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg).toMatch(message);
    }
  });

  it('validates hostports and serves each hostport from one edge only', async () => {
    for (const bad of [
      'example.com',
      'Example.com:443',
      'example.com:0',
      'example.com:70000',
      'exa mple.com:443',
    ]) {
      const response = await t.api('POST', '/edges/tls', { hostports: [bad] });
      expect(response.status, bad).toBe(400);
      expect(response.body.msg).toMatch(/^hostports\[0\]: /);
    }
    const hostport = nextHost();
    const first = (await t.api('POST', '/edges/tls', { hostports: [hostport] })).body;
    const clash = await t.api('POST', '/edges/tls', { hostports: ['other.example.com:443', hostport] });
    expect(clash.status).toBe(409);
    expect(clash.body.msg).toBe(`hostports[1]: '${hostport}' is already served by edge ${first.id}`);
    const twice = await t.api('POST', '/edges/tls', {
      hostports: ['x.example.com:443', 'x.example.com:443'],
    });
    expect(twice.status).toBe(400);
    // Deleting the edge frees its hostport.
    expect((await t.api('DELETE', `/edges/tls/${first.id}`)).status).toBe(204);
    expect((await t.api('POST', '/edges/tls', { hostports: [hostport] })).status).toBe(201);
  });

  it('refuses hostports in the domain of reserved TCP addresses', async () => {
    for (const [index, hostport] of [
      [1, 'eu.tcp.edgeward.dev:12345'],
      [1, 'tcp.edgeward.dev:443'],
      [1, '*.tcp.edgeward.dev:443'],
    ] as const) {
      const created = await t.api('POST', '/edges/tls', { hostports: [nextHost(), hostport] });
      expect(created.status, hostport).toBe(400);
      expect(created.body.msg).toBe(
        `hostports[${index}]: '${hostport}' is in the domain of reserved TCP addresses (tcp.edgeward.dev); only TCP edges serve those`,
      );
    }
    const edge = (await t.api('POST', '/edges/tls', {})).body;
    const patched = await t.api('PATCH', `/edges/tls/${edge.id}`, {
      hostports: ['us.tcp.edgeward.dev:2000'],
    });
    expect(patched.status).toBe(400);
    expect(patched.body.msg).toMatch(/^hostports\[0\]: 'us\.tcp\.edgeward\.dev:2000' is in the domain/);
    // Only the domain itself and names under it: a look-alike is an ordinary host.
    const lookalike = await t.api('POST', '/edges/tls', { hostports: ['mytcp.edgeward.dev:443'] });
    expect(lookalike.status, JSON.stringify(lookalike.body)).toBe(201);
  });

  it('keeps the reference of an IP policy deleted later (spec rule 1)', async () => {
    const policy = (await t.api('POST', '/ip_policies', {})).body;
    const edge = (await t.api('POST', '/edges/tls', { ip_restriction: { ip_policy_ids: [policy.id] } })).body;
    expect((await t.api('DELETE', `/ip_policies/${policy.id}`)).status).toBe(204);
    const after = await t.api('GET', `/edges/tls/${edge.id}`);
    expect(after.body.ip_restriction).toEqual(edge.ip_restriction);
  });

  it('accepts a deleted IP policy the edge references already when its module is sent back (rule 1)', async () => {
    const gone = (await t.api('POST', '/ip_policies', {})).body.id as string;
    const edge = (
      await t.api('POST', '/edges/tls', {
        ip_restriction: { enabled: false, ip_policy_ids: [gone, policyId] },
      })
    ).body;
    expect((await t.api('DELETE', `/ip_policies/${gone}`)).status).toBe(204);
    const base = `/edges/tls/${edge.id}`;
    const asRead = (await t.api('GET', `${base}/ip_restriction`)).body as {
      enabled: boolean;
      ip_policies: Array<{ id: string }>;
    };
    const ids = asRead.ip_policies.map((ref) => ref.id);
    expect(ids).toEqual([gone, policyId]);

    // GET -> PUT round trip of the module.
    const put = await t.api('PUT', `${base}/ip_restriction`, { enabled: asRead.enabled, ip_policy_ids: ids });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toEqual(asRead);
    // The edge PATCH re-sending the read form's ids, here reordered and enabled.
    const patched = await t.api('PATCH', base, { ip_restriction: { ip_policy_ids: [policyId, gone] } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.ip_restriction).toEqual({
      enabled: true,
      ip_policies: [
        { id: policyId, uri: `${t.baseUrl}/ip_policies/${policyId}` },
        { id: gone, uri: `${t.baseUrl}/ip_policies/${gone}` },
      ],
    });

    // Only ids the edge references already: a new unknown id, a repeat, or a new edge is still refused.
    const added = await t.api('PUT', `${base}/ip_restriction`, { ip_policy_ids: [gone, 'ipp_missing'] });
    expect(added.status).toBe(400);
    expect(added.body.msg).toBe("ip_policy_ids[1]: no IP policy with id 'ipp_missing' exists");
    const repeated = await t.api('PATCH', base, { ip_restriction: { ip_policy_ids: [gone, gone] } });
    expect(repeated.status).toBe(400);
    expect(repeated.body.msg).toMatch(/^ip_restriction\.ip_policy_ids\[1\]: '.*' is listed twice/);
    const fresh = await t.api('POST', '/edges/tls', { ip_restriction: { ip_policy_ids: [gone] } });
    expect(fresh.status).toBe(400);
    expect(fresh.body.msg).toBe(`ip_restriction.ip_policy_ids[0]: no IP policy with id '${gone}' exists`);
    // Once the module no longer lists it, the id is new again.
    await t.api('PUT', `${base}/ip_restriction`, { ip_policy_ids: [policyId] });
    const readded = await t.api('PUT', `${base}/ip_restriction`, { ip_policy_ids: [policyId, gone] });
    expect(readded.status).toBe(400);
    expect(readded.body.msg).toBe(`ip_policy_ids[1]: no IP policy with id '${gone}' exists`);
  });

  it('refuses mutual_tls while TLS passes through upstream; backend, ip_restriction and policy stay allowed', async () => {
    const caModule = { certificate_authority_ids: [caId] };
    const upstream = { terminate_at: 'upstream' };
    const passthroughMsg = "mutual_tls: cannot be set while tls_termination.terminate_at is 'upstream'";

    const both = await t.api('POST', '/edges/tls', { mutual_tls: caModule, tls_termination: upstream });
    expect(both.status).toBe(400);
    expect(both.body.msg).toBe(passthroughMsg);
    // A disabled mutual_tls module is refused as well: the configuration contradicts itself.
    const disabled = await t.api('POST', '/edges/tls', {
      mutual_tls: { ...caModule, enabled: false },
      tls_termination: upstream,
    });
    expect(disabled.body.msg).toBe(passthroughMsg);

    const passthrough = await t.api('POST', '/edges/tls', {
      hostports: [nextHost()],
      backend: { backend_id: backendId },
      ip_restriction: { ip_policy_ids: [policyId] },
      policy: { inbound: [{ name: 'deny', actions: [{ type: 'deny' }] }] },
      tls_termination: upstream,
    });
    expect(passthrough.status, JSON.stringify(passthrough.body)).toBe(201);
    const base = `/edges/tls/${passthrough.body.id}`;
    const patch = await t.api('PATCH', base, { mutual_tls: caModule });
    expect(patch.status).toBe(400);
    expect(patch.body.msg).toBe(passthroughMsg);
    const put = await t.api('PUT', `${base}/mutual_tls`, caModule);
    expect(put.status).toBe(400);
    expect(put.body.msg).toBe(passthroughMsg);
    expect((await t.api('GET', `${base}/mutual_tls`)).status).toBe(404);
    // The other modules can still be replaced on a passthrough edge.
    expect((await t.api('PUT', `${base}/backend`, { backend_id: backendId })).status).toBe(200);
    expect((await t.api('PUT', `${base}/ip_restriction`, { ip_policy_ids: [policyId] })).status).toBe(200);
    expect((await t.api('PUT', `${base}/policy`, { inbound: [] })).status).toBe(200);
    // Both changed in one update is fine: TLS now ends at the edge.
    const switched = await t.api('PATCH', base, {
      mutual_tls: caModule,
      tls_termination: { terminate_at: 'edge' },
    });
    expect(switched.status, JSON.stringify(switched.body)).toBe(200);
    expect(switched.body.mutual_tls).not.toBeNull();

    // With mutual_tls set, TLS cannot be passed through, by update or by the module's PUT.
    const back = await t.api('PATCH', base, { tls_termination: upstream });
    expect(back.status).toBe(400);
    expect(back.body.msg).toBe(
      "tls_termination.terminate_at: cannot be 'upstream' while mutual_tls is set (mutual TLS needs TLS terminated at the edge); remove mutual_tls first",
    );
    const putBack = await t.api('PUT', `${base}/tls_termination`, upstream);
    expect(putBack.status).toBe(400);
    expect(putBack.body.msg).toBe(
      "terminate_at: cannot be 'upstream' while mutual_tls is set (mutual TLS needs TLS terminated at the edge); remove mutual_tls first",
    );
    expect((await t.api('GET', base)).body.tls_termination).toMatchObject({ terminate_at: 'edge' });
    expect((await t.api('DELETE', `${base}/mutual_tls`)).status).toBe(204);
    const afterRemoval = await t.api('PUT', `${base}/tls_termination`, upstream);
    expect(afterRemoval.status).toBe(200);
    expect(afterRemoval.body).toEqual({ enabled: true, terminate_at: 'upstream', min_version: null });
  });

  it('validates policy rules as the spec shapes them', async () => {
    const bad = [
      [{ inbound: [{ expressions: [], actions: [{ type: 'deny' }] }] }, /^policy\.inbound\[0\]\.name: /],
      [
        { inbound: [{ name: 'r', actions: [] }] },
        /^policy\.inbound\[0\]\.actions: a rule needs at least one action/,
      ],
      [
        { inbound: [{ name: 'r', actions: [{ config: {} }] }] },
        /^policy\.inbound\[0\]\.actions\[0\]\.type: /,
      ],
      [
        { inbound: [{ name: 'r', actions: [{ type: 'deny', config: 'x' }] }] },
        /^policy\.inbound\[0\]\.actions\[0\]\.config: /,
      ],
      [{ inbound: [], extra: 1 }, /^policy\.extra: unknown field/],
    ] as const;
    for (const [policy, message] of bad) {
      const response = await t.api('POST', '/edges/tls', { policy });
      expect(response.status, JSON.stringify(policy)).toBe(400);
      expect(response.body.msg).toMatch(message);
    }
  });
});

describe('TLS edge modules', () => {
  it('PUT replaces, GET shows, DELETE removes every module', async () => {
    const edge = (await t.api('POST', '/edges/tls', {})).body;
    const base = `/edges/tls/${edge.id}`;
    const modules = {
      backend: [
        { backend_id: backendId },
        { enabled: true, backend: { id: backendId, uri: `${t.baseUrl}/backends/tunnel_group/${backendId}` } },
      ],
      ip_restriction: [
        { ip_policy_ids: [policyId] },
        { enabled: true, ip_policies: [{ id: policyId, uri: `${t.baseUrl}/ip_policies/${policyId}` }] },
      ],
      mutual_tls: [
        { enabled: false, certificate_authority_ids: [caId] },
        {
          enabled: false,
          certificate_authorities: [{ id: caId, uri: `${t.baseUrl}/certificate_authorities/${caId}` }],
        },
      ],
      // At the edge: mutual_tls (set above) cannot be combined with TLS passed through upstream.
      tls_termination: [
        { terminate_at: 'edge', min_version: '1.3' },
        { enabled: true, terminate_at: 'edge', min_version: '1.3' },
      ],
      // A TLS edge's policy acts on connections: conn.* and deny only, no outbound rules.
      policy: [
        {
          inbound: [
            { name: 'probe', expressions: ["conn.client_ip == '192.0.2.1'"], actions: [{ type: 'deny' }] },
          ],
          outbound: [],
        },
        {
          enabled: true,
          inbound: [
            {
              name: 'probe',
              expressions: ["conn.client_ip == '192.0.2.1'"],
              actions: [{ type: 'deny', config: null }],
            },
          ],
          outbound: [],
        },
      ],
    } as const;
    await expectModuleRoundTrips(t, base, modules);
  });

  it('validates module bodies and 404s an unknown edge', async () => {
    const edge = (await t.api('POST', '/edges/tls', {})).body;
    const missing = await t.api('PUT', `/edges/tls/${edge.id}/backend`, { backend_id: 'bkdtg_missing' });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toMatch(/^backend_id: no tunnel-group backend/);
    const unknownField = await t.api('PUT', `/edges/tls/${edge.id}/backend`, {
      backend_id: backendId,
      weight: 2,
    });
    expect(unknownField.body.msg).toBe('weight: unknown field');
    expect((await t.api('PUT', '/edges/tls/edgtls_missing/backend', { backend_id: backendId })).status).toBe(
      404,
    );
    expect((await t.api('GET', '/edges/tls/edgtls_missing/policy')).status).toBe(404);
    expect((await t.api('DELETE', '/edges/tls/edgtls_missing/policy')).status).toBe(404);
  });

  it('records tls_edge_updated.v0 for module changes, with the edge as it now stands', async () => {
    const edge = (await t.api('POST', '/edges/tls', { hostports: [nextHost()] })).body;
    const put = await t.api('PUT', `/edges/tls/${edge.id}/backend`, { backend_id: backendId });
    expect(put.status).toBe(200);
    const afterPut = (await t.api('GET', `/edges/tls/${edge.id}`)).body;
    expect(afterPut.backend).toEqual(put.body);
    expect((await t.api('DELETE', `/edges/tls/${edge.id}/backend`)).status).toBe(204);
    const afterDelete = (await t.api('GET', `/edges/tls/${edge.id}`)).body;
    expect(afterDelete.backend).toBeNull();
    // Deleting a module that is not set changes nothing: still 204, but no event.
    expect((await t.api('DELETE', `/edges/tls/${edge.id}/backend`)).status).toBe(204);
    expect((await t.api('DELETE', `/edges/tls/${edge.id}/policy`)).status).toBe(204);
    const events = await eventsOf(t, edge.id as string);
    expect(events.map((event) => event.type)).toEqual([
      'tls_edge_created.v0',
      'tls_edge_updated.v0',
      'tls_edge_updated.v0',
    ]);
    // The payload is the edge in read form, not the module.
    expect(JSON.parse(events[1]?.payload ?? '')).toEqual({ object: afterPut });
    expect(JSON.parse(events[2]?.payload ?? '')).toEqual({ object: afterDelete });
  });

  it('lists edges newest first across pages', async () => {
    for (let i = 0; i < 3; i++) await t.api('POST', '/edges/tls', { description: `page-${i}` });
    const { seen, pages } = await walkPages<{
      tls_edges: Array<{ id: string }>;
      next_page_uri: string | null;
    }>(t, '/edges/tls?limit=2', 'tls_edges');
    expect(pages).toBeGreaterThanOrEqual(2);
    expect(seen.length).toBe(await countRows(t, 'tls_edges'));
    expect(seen).toEqual([...seen].sort().reverse());
  });
});
