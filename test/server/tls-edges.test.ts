import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectModuleRoundTrips } from '../support/edge-modules.js';
import { insertEdgeReferences } from '../support/edge-references.js';
import { eventTypesOf } from '../support/events.js';
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
            name: 'block-bots',
            expressions: ["req.user_agent.contains('bot')"],
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
          name: 'block-bots',
          expressions: ["req.user_agent.contains('bot')"],
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

  it('keeps the reference of an IP policy deleted later (spec rule 1)', async () => {
    const policy = (await t.api('POST', '/ip_policies', {})).body;
    const edge = (await t.api('POST', '/edges/tls', { ip_restriction: { ip_policy_ids: [policy.id] } })).body;
    expect((await t.api('DELETE', `/ip_policies/${policy.id}`)).status).toBe(204);
    const after = await t.api('GET', `/edges/tls/${edge.id}`);
    expect(after.body.ip_restriction).toEqual(edge.ip_restriction);
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
      tls_termination: [
        { terminate_at: 'upstream', min_version: null },
        { enabled: true, terminate_at: 'upstream', min_version: null },
      ],
      policy: [
        {
          inbound: [],
          outbound: [{ name: 'log', expressions: [], actions: [{ type: 'log', config: { level: 'info' } }] }],
        },
        {
          enabled: true,
          inbound: [],
          outbound: [{ name: 'log', expressions: [], actions: [{ type: 'log', config: { level: 'info' } }] }],
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

  it('records tls_edge_updated.v0 for module changes', async () => {
    const edge = (await t.api('POST', '/edges/tls', {})).body;
    await t.api('PUT', `/edges/tls/${edge.id}/backend`, { backend_id: backendId });
    await t.api('DELETE', `/edges/tls/${edge.id}/backend`);
    const types = await eventTypesOf(t, edge.id as string);
    expect(types).toEqual(['tls_edge_created.v0', 'tls_edge_updated.v0', 'tls_edge_updated.v0']);
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
