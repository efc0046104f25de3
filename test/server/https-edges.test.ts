import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectModuleRoundTrips } from '../support/edge-modules.js';
import { insertEdgeReferences } from '../support/edge-references.js';
import { eventsOf, eventTypesOf } from '../support/events.js';
import { countRows, walkPages } from '../support/paging.js';
import {
  type ApiResponse,
  idPattern,
  RFC3339_UTC,
  startTestServer,
  type TestServer,
} from '../support/server.js';

let t: TestServer;
let caId: string;
let hostCounter = 0;
const nextHost = () => `web${++hostCounter}.example.com:443`;

beforeAll(async () => {
  t = await startTestServer();
  ({ caId } = await insertEdgeReferences(t, '1'));
});
afterAll(async () => t.stop());

const EDGE_KEYS = [
  'created_at',
  'description',
  'hostports',
  'id',
  'metadata',
  'mutual_tls',
  'routes',
  'tls_termination',
  'uri',
];

type Edge = { id: string; routes: Array<{ id: string }> } & Record<string, unknown>;

describe('HTTPS edges', () => {
  it('creates an edge with both modules, routes empty, and reads it back', async () => {
    const hostport = nextHost();
    const created = await t.api<Edge>('POST', '/edges/https', {
      description: 'web',
      metadata: '{"team":"web"}',
      hostports: [hostport],
      mutual_tls: { certificate_authority_ids: [caId] },
      tls_termination: { min_version: '1.3' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const edge = created.body;
    expect(Object.keys(edge).sort()).toEqual(EDGE_KEYS);
    expect(edge.id).toMatch(idPattern('edghts'));
    expect(edge.uri).toBe(`${t.baseUrl}/edges/https/${edge.id}`);
    expect(edge.created_at).toMatch(RFC3339_UTC);
    expect(edge.description).toBe('web');
    expect(edge.metadata).toBe('{"team":"web"}');
    expect(edge.hostports).toEqual([hostport]);
    expect(edge.mutual_tls).toEqual({
      enabled: true,
      certificate_authorities: [{ id: caId, uri: `${t.baseUrl}/certificate_authorities/${caId}` }],
    });
    expect(edge.tls_termination).toEqual({ enabled: true, terminate_at: 'edge', min_version: '1.3' });
    expect(edge.routes).toEqual([]);
    const fetched = await t.api('GET', `/edges/https/${edge.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(edge);
  });

  it('creates a bare edge with modules null and TLS terminated at the edge with a safe default', async () => {
    const bare = (await t.api('POST', '/edges/https', {})).body;
    expect(bare).toMatchObject({
      hostports: [],
      mutual_tls: null,
      tls_termination: null,
      routes: [],
      description: '',
      metadata: '',
    });
    const defaulted = (await t.api('POST', '/edges/https', { tls_termination: {} })).body;
    expect(defaulted.tls_termination).toEqual({ enabled: true, terminate_at: 'edge', min_version: '1.2' });
  });

  it('refuses terminate_at other than edge (HTTPS edges always terminate at the edge) and unknown versions', async () => {
    const upstream = await t.api('POST', '/edges/https', {
      tls_termination: { terminate_at: 'upstream', min_version: null },
    });
    expect(upstream.status).toBe(400);
    expect(upstream.body.msg).toBe(
      'tls_termination.terminate_at: HTTPS edges always terminate TLS at the edge',
    );
    const notAString = await t.api('POST', '/edges/https', { tls_termination: { terminate_at: null } });
    expect(notAString.status).toBe(400);
    expect(notAString.body.msg).toBe(
      'tls_termination.terminate_at: HTTPS edges always terminate TLS at the edge',
    );
    const badVersion = await t.api('POST', '/edges/https', { tls_termination: { min_version: '1.4' } });
    expect(badVersion.status).toBe(400);
    expect(badVersion.body.msg).toMatch(/^tls_termination\.min_version: must be one of/);
    const missingCa = await t.api('POST', '/edges/https', {
      mutual_tls: { certificate_authority_ids: ['ca_missing'] },
    });
    expect(missingCa.status).toBe(400);
    expect(missingCa.body.msg).toMatch(
      /^mutual_tls\.certificate_authority_ids\[0\]: no certificate authority/,
    );
    const emptyCas = await t.api('POST', '/edges/https', { mutual_tls: { certificate_authority_ids: [] } });
    expect(emptyCas.body.msg).toBe(
      'mutual_tls.certificate_authority_ids: must list at least one certificate authority',
    );
    const unknown = await t.api('POST', '/edges/https', { backend: { backend_id: 'bkdtg_x' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.msg).toBe('backend: unknown field');
    const description = await t.api('POST', '/edges/https', { description: 'x'.repeat(256) });
    expect(description.body.msg).toBe('description: must be at most 255 bytes');
    const metadata = await t.api('POST', '/edges/https', { metadata: 'x'.repeat(4097) });
    expect(metadata.body.msg).toBe('metadata: must be at most 4096 bytes');
  });

  it('updates: absent modules unchanged, present ones replaced completely, removal refused', async () => {
    const edge = (
      await t.api<Edge>('POST', '/edges/https', {
        hostports: [nextHost()],
        mutual_tls: { certificate_authority_ids: [caId] },
        tls_termination: { min_version: '1.3' },
      })
    ).body;
    const newHost = nextHost();
    const updated = await t.api<Edge>('PATCH', `/edges/https/${edge.id}`, {
      metadata: 'v2',
      hostports: [newHost],
      tls_termination: { enabled: false },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({
      ...edge,
      metadata: 'v2',
      hostports: [newHost],
      // Replaced completely: min_version was not given again, so the default applies.
      tls_termination: { enabled: false, terminate_at: 'edge', min_version: '1.2' },
    });
    const removal = await t.api('PATCH', `/edges/https/${edge.id}`, { mutual_tls: null });
    expect(removal.status).toBe(400);
    expect(removal.body.msg).toMatch(/^mutual_tls: a module cannot be removed through an update; use DELETE/);
    expect((await t.api('GET', `/edges/https/${edge.id}`)).body).toEqual(updated.body);
    expect((await t.api('PATCH', '/edges/https/edghts_missing', {})).status).toBe(404);
  });

  it('serves a hostport from one edge only, across TLS and HTTPS edges, and frees it on delete', async () => {
    const hostport = nextHost();
    const first = (await t.api<Edge>('POST', '/edges/https', { hostports: [hostport] })).body;
    const clash = await t.api('POST', '/edges/https', { hostports: [hostport] });
    expect(clash.status).toBe(409);
    expect(clash.body.msg).toBe(`hostports[0]: '${hostport}' is already served by edge ${first.id}`);
    const tlsClash = await t.api('POST', '/edges/tls', { hostports: [hostport] });
    expect(tlsClash.status).toBe(409);
    const bad = await t.api('POST', '/edges/https', { hostports: ['Example.com:443'] });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toMatch(/^hostports\[0\]: /);
    expect((await t.api('DELETE', `/edges/https/${first.id}`)).status).toBe(204);
    expect((await t.api('POST', '/edges/https', { hostports: [hostport] })).status).toBe(201);
  });

  it('takes its tls_termination read form back as written (terminate_at edge)', async () => {
    const edge = (await t.api<Edge>('POST', '/edges/https', { tls_termination: { min_version: '1.3' } }))
      .body;
    const asRead = edge.tls_termination;
    expect(asRead).toEqual({ enabled: true, terminate_at: 'edge', min_version: '1.3' });
    const created = await t.api<Edge>('POST', '/edges/https', { tls_termination: asRead });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.tls_termination).toEqual(asRead);
    const patched = await t.api<Edge>('PATCH', `/edges/https/${edge.id}`, {
      tls_termination: { ...(asRead as object), min_version: '1.2' },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.tls_termination).toEqual({ enabled: true, terminate_at: 'edge', min_version: '1.2' });
    const module = await t.api('GET', `/edges/https/${edge.id}/tls_termination`);
    const put = await t.api('PUT', `/edges/https/${edge.id}/tls_termination`, module.body);
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toEqual(module.body);
  });

  it('refuses hostports in the domain of reserved TCP addresses, which its TCP edge could not serve then', async () => {
    const addr = (await t.api<{ addr: string }>('POST', '/reserved_addrs', { region: 'us' })).body.addr;
    expect(addr).toMatch(/^us\.tcp\.edgeward\.dev:\d+$/);
    const created = await t.api('POST', '/edges/https', { hostports: [addr] });
    expect(created.status).toBe(400);
    expect(created.body.msg).toBe(
      `hostports[0]: '${addr}' is in the domain of reserved TCP addresses (tcp.edgeward.dev); only TCP edges serve those`,
    );
    const edge = (await t.api<Edge>('POST', '/edges/https', { hostports: [nextHost()] })).body;
    const patched = await t.api('PATCH', `/edges/https/${edge.id}`, { hostports: [nextHost(), addr] });
    expect(patched.status).toBe(400);
    expect(patched.body.msg).toMatch(/^hostports\[1\]: '.*' is in the domain of reserved TCP addresses/);
    expect((await t.api<Edge>('GET', `/edges/https/${edge.id}`)).body.hostports).toEqual(edge.hostports);
    const tls = await t.api('POST', '/edges/tls', { hostports: [addr] });
    expect(tls.status).toBe(400);
    // The address stays free for a TCP edge.
    const tcp = await t.api('POST', '/edges/tcp', { hostports: [addr] });
    expect(tcp.status, JSON.stringify(tcp.body)).toBe(201);
  });

  it('shows every route of the edge, oldest first, and deletes them with the edge', async () => {
    const edge = (await t.api<Edge>('POST', '/edges/https', {})).body;
    const routeIds: string[] = [];
    for (const match of ['/a', '/b', '/c']) {
      const route = await t.api('POST', `/edges/https/${edge.id}/routes`, {
        match_type: 'path_prefix',
        match,
      });
      expect(route.status).toBe(201);
      routeIds.push(route.body.id as string);
    }
    const fetched = (await t.api<Edge>('GET', `/edges/https/${edge.id}`)).body;
    expect(fetched.routes.map((route) => route.id)).toEqual(routeIds);
    for (const [index, id] of routeIds.entries()) {
      expect(fetched.routes[index]).toEqual(
        (await t.api('GET', `/edges/https/${edge.id}/routes/${id}`)).body,
      );
    }
    const listed = await t.api<{ https_edges: Edge[] }>('GET', '/edges/https');
    expect(listed.body.https_edges.find((item) => item.id === edge.id)).toEqual(fetched);

    expect((await t.api('DELETE', `/edges/https/${edge.id}`)).status).toBe(204);
    expect((await t.api('GET', `/edges/https/${edge.id}`)).status).toBe(404);
    const left = await t.server.app.edgeward.db
      .selectFrom('https_edge_routes')
      .select('id')
      .where('edge_id', '=', edge.id)
      .execute();
    expect(left).toEqual([]);
    for (const id of routeIds) {
      expect(await eventTypesOf(t, id)).toEqual([
        'https_edge_route_created.v0',
        'https_edge_route_deleted.v0',
      ]);
    }
    expect((await t.api('DELETE', `/edges/https/${edge.id}`)).status).toBe(404);
  });

  it('lists each edge with its own routes, loading the routes of the whole page in one query', async () => {
    const edges: Edge[] = [];
    for (let i = 0; i < 3; i++) edges.push((await t.api<Edge>('POST', '/edges/https', {})).body);
    // Created in turns, so only grouping by edge (not creation order) puts each route under its edge.
    const routeIds = new Map(edges.map((edge) => [edge.id, [] as string[]]));
    for (const match of ['/x', '/y']) {
      for (const edge of edges) {
        const route = await t.api('POST', `/edges/https/${edge.id}/routes`, {
          match_type: 'exact_path',
          match,
        });
        expect(route.status).toBe(201);
        routeIds.get(edge.id)?.push(route.body.id as string);
      }
    }
    // GET routes read through the read connection (the same pool on PostgreSQL).
    const selectFrom = vi.spyOn(t.server.app.edgeward.reads, 'selectFrom');
    let routeQueries: number;
    let listed: ApiResponse<{ https_edges: Edge[] }>;
    try {
      listed = await t.api<{ https_edges: Edge[] }>('GET', '/edges/https?limit=3');
      routeQueries = selectFrom.mock.calls.filter(([table]) => table === 'https_edge_routes').length;
    } finally {
      selectFrom.mockRestore();
    }
    expect(listed.status).toBe(200);
    expect(routeQueries).toBe(1);
    expect(listed.body.https_edges.map((edge) => edge.id)).toEqual(edges.map((edge) => edge.id).reverse());
    for (const edge of listed.body.https_edges) {
      expect(edge.routes.map((route) => route.id)).toEqual(routeIds.get(edge.id));
      expect(edge).toEqual((await t.api('GET', `/edges/https/${edge.id}`)).body);
    }
  });

  it('records https_edge_* events for create, update, module changes and delete', async () => {
    const edge = (await t.api<Edge>('POST', '/edges/https', {})).body;
    await t.api('POST', `/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/' });
    await t.api('PATCH', `/edges/https/${edge.id}`, { description: 'x' });
    await t.api('PUT', `/edges/https/${edge.id}/tls_termination`, { min_version: '1.3' });
    const afterPut = (await t.api('GET', `/edges/https/${edge.id}`)).body;
    await t.api('DELETE', `/edges/https/${edge.id}/tls_termination`);
    const afterDelete = (await t.api('GET', `/edges/https/${edge.id}`)).body;
    // Deleting a module that is not set records nothing.
    expect((await t.api('DELETE', `/edges/https/${edge.id}/tls_termination`)).status).toBe(204);
    expect((await t.api('DELETE', `/edges/https/${edge.id}/mutual_tls`)).status).toBe(204);
    await t.api('DELETE', `/edges/https/${edge.id}`);
    const events = await eventsOf(t, edge.id);
    expect(events.map((event) => event.type)).toEqual([
      'https_edge_created.v0',
      'https_edge_updated.v0',
      'https_edge_updated.v0',
      'https_edge_updated.v0',
      'https_edge_deleted.v0',
    ]);
    // Module changes carry the edge (with its routes) as it then stood, not the module.
    expect(JSON.parse(events[2]?.payload ?? '')).toEqual({ object: afterPut });
    expect(JSON.parse(events[3]?.payload ?? '')).toEqual({ object: afterDelete });
    expect((afterPut.routes as unknown[]).length).toBe(1);
  });

  it('lists edges newest first across pages', async () => {
    for (let i = 0; i < 3; i++) await t.api('POST', '/edges/https', { description: `page-${i}` });
    const { seen, pages } = await walkPages<{
      https_edges: Array<{ id: string }>;
      next_page_uri: string | null;
    }>(t, '/edges/https?limit=2', 'https_edges', (page) => {
      expect(Object.keys(page.body).sort()).toEqual(['https_edges', 'next_page_uri', 'uri']);
      expect((page.body as unknown as { uri: string }).uri).toBe(`${t.baseUrl}/edges/https`);
    });
    expect(pages).toBeGreaterThanOrEqual(2);
    expect(seen.length).toBe(await countRows(t, 'https_edges'));
    expect(seen).toEqual([...seen].sort().reverse());
  });
});

describe('HTTPS edge modules', () => {
  it('PUT replaces, GET shows, DELETE removes mutual_tls and tls_termination', async () => {
    const edge = (await t.api<Edge>('POST', '/edges/https', {})).body;
    const base = `/edges/https/${edge.id}`;
    const modules = {
      mutual_tls: [
        { enabled: false, certificate_authority_ids: [caId] },
        {
          enabled: false,
          certificate_authorities: [{ id: caId, uri: `${t.baseUrl}/certificate_authorities/${caId}` }],
        },
      ],
      tls_termination: [{ min_version: '1.0' }, { enabled: true, terminate_at: 'edge', min_version: '1.0' }],
    } as const;
    await expectModuleRoundTrips(t, base, modules);
  });

  it('validates module bodies, has no route-only modules, and 404s an unknown edge', async () => {
    const edge = (await t.api<Edge>('POST', '/edges/https', {})).body;
    const bad = await t.api('PUT', `/edges/https/${edge.id}/tls_termination`, { terminate_at: 'upstream' });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toBe('terminate_at: HTTPS edges always terminate TLS at the edge');
    const missing = await t.api('PUT', `/edges/https/${edge.id}/mutual_tls`, {
      certificate_authority_ids: [caId, 'ca_missing'],
    });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toMatch(/^certificate_authority_ids\[1\]: no certificate authority/);
    expect((await t.api('PUT', `/edges/https/${edge.id}/backend`, { backend_id: 'x' })).status).toBe(404);
    expect((await t.api('PUT', '/edges/https/edghts_missing/tls_termination', {})).status).toBe(404);
    expect((await t.api('GET', '/edges/https/edghts_missing/mutual_tls')).status).toBe(404);
    expect((await t.api('DELETE', '/edges/https/edghts_missing/mutual_tls')).status).toBe(404);
    expect((await t.api('GET', '/edges/https/edghts_missing')).body).toMatchObject({
      error_code: 'ERR_EDGEWARD_400',
      status_code: 404,
      msg: "HTTPS edge with id 'edghts_missing' not found",
    });
  });
});
