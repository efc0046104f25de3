import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgewardClient } from '../../src/client/index.js';
import { insertEdgeReferences } from '../support/edge-references.js';
import { eventsOf } from '../support/events.js';
import { walkPages } from '../support/paging.js';
import { ADMIN_KEY, idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let backendId: string;
let policyId: string;

beforeAll(async () => {
  t = await startTestServer();
  ({ backendId } = await insertEdgeReferences(t, '2'));
  policyId = (await t.api('POST', '/ip_policies', {})).body.id as string;
});
afterAll(async () => t.stop());

const ROUTE_KEYS = [
  'backend',
  'circuit_breaker',
  'compression',
  'created_at',
  'description',
  'edge_id',
  'id',
  'ip_restriction',
  'match',
  'match_type',
  'metadata',
  'oauth',
  'oidc',
  'policy',
  'request_headers',
  'response_headers',
  'saml',
  'uri',
  'user_agent_filter',
  'webhook_verification',
  'websocket_tcp_converter',
];
const MODULE_NAMES = ROUTE_KEYS.filter(
  (key) =>
    !['created_at', 'description', 'edge_id', 'id', 'match', 'match_type', 'metadata', 'uri'].includes(key),
);

type Route = { id: string; edge_id: string } & Record<string, unknown>;

const newEdge = async () => (await t.api('POST', '/edges/https', {})).body.id as string;
const routes = (edgeId: string) => `/edges/https/${edgeId}/routes`;

describe('HTTPS edge routes', () => {
  it('creates a route with the read form of the spec, every module null', async () => {
    const edgeId = await newEdge();
    const created = await t.api<Route>('POST', routes(edgeId), {
      match_type: 'path_prefix',
      match: '/api',
      description: 'api',
      metadata: '{"v":1}',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const route = created.body;
    expect(Object.keys(route).sort()).toEqual(ROUTE_KEYS);
    expect(route.id).toMatch(idPattern('edghtsrt'));
    expect(route.edge_id).toBe(edgeId);
    expect(route.uri).toBe(`${t.baseUrl}/edges/https/${edgeId}/routes/${route.id}`);
    expect(route.created_at).toMatch(RFC3339_UTC);
    expect(route).toMatchObject({
      description: 'api',
      metadata: '{"v":1}',
      match_type: 'path_prefix',
      match: '/api',
    });
    expect(MODULE_NAMES).toHaveLength(13);
    for (const name of MODULE_NAMES) expect(route[name], name).toBeNull();
    const fetched = await t.api('GET', `${routes(edgeId)}/${route.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(route);
    expect((await t.api('GET', `/edges/https/${edgeId}`)).body.routes).toEqual([route]);
  });

  it('accepts a path, a host, or a host plus path as match', async () => {
    const edgeId = await newEdge();
    for (const match of ['/', '/v1/users', 'api.example.com', 'api.example.com/v1', '*.example.com']) {
      const created = await t.api('POST', routes(edgeId), { match_type: 'exact_path', match });
      expect(created.status, match).toBe(201);
      expect(created.body.match).toBe(match);
    }
  });

  it('validates match_type and match, naming the field', async () => {
    const edgeId = await newEdge();
    const cases = [
      [{ match: '/' }, 'match_type: is required'],
      [{ match_type: 'regex', match: '/' }, 'match_type: must be one of "exact_path", "path_prefix"'],
      [{ match_type: 'exact_path' }, 'match: is required'],
      [{ match_type: 'exact_path', match: '' }, 'match: must not be empty'],
      [
        { match_type: 'exact_path', match: '/a b' },
        'match: must not contain whitespace or control characters',
      ],
      [
        { match_type: 'exact_path', match: '/a\tb' },
        'match: must not contain whitespace or control characters',
      ],
      [
        { match_type: 'exact_path', match: '/a\u0000' },
        'match: must not contain whitespace or control characters',
      ],
      [{ match_type: 'exact_path', match: `/${'é'.repeat(512)}` }, 'match: must be at most 1024 bytes'],
      [{ match_type: 'exact_path', match: 7 }, 'match: must be a string, got number'],
      [{ match_type: 'exact_path', match: '/', priority: 1 }, 'priority: unknown field'],
    ] as const;
    for (const [body, message] of cases) {
      const response = await t.api('POST', routes(edgeId), body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg).toBe(message);
    }
    // Exactly 1024 bytes is allowed.
    const longest = `/${'a'.repeat(1023)}`;
    expect((await t.api('POST', routes(edgeId), { match_type: 'exact_path', match: longest })).status).toBe(
      201,
    );
  });

  it('refuses a second route with the same match_type and match on the same edge (409)', async () => {
    const edgeId = await newEdge();
    const first = (await t.api<Route>('POST', routes(edgeId), { match_type: 'path_prefix', match: '/x' }))
      .body;
    const clash = await t.api('POST', routes(edgeId), { match_type: 'path_prefix', match: '/x' });
    expect(clash.status).toBe(409);
    expect(clash.body).toMatchObject({ error_code: 'ERR_EDGEWARD_501' });
    expect(clash.body.msg).toBe(
      `match: route ${first.id} of HTTPS edge ${edgeId} already has match_type 'path_prefix' and match "/x"`,
    );
    // Another match type, or another edge, is a different route.
    expect((await t.api('POST', routes(edgeId), { match_type: 'exact_path', match: '/x' })).status).toBe(201);
    expect(
      (await t.api('POST', routes(await newEdge()), { match_type: 'path_prefix', match: '/x' })).status,
    ).toBe(201);
    // An update may not move a route onto another's selector either.
    const second = (await t.api<Route>('POST', routes(edgeId), { match_type: 'path_prefix', match: '/y' }))
      .body;
    const moved = await t.api('PATCH', `${routes(edgeId)}/${second.id}`, { match: '/x' });
    expect(moved.status).toBe(409);
    // Re-stating its own selector is not a conflict.
    const same = await t.api('PATCH', `${routes(edgeId)}/${second.id}`, {
      match_type: 'path_prefix',
      match: '/y',
    });
    expect(same.status).toBe(200);
  });

  it('404s an unknown edge and a route addressed under another edge', async () => {
    const edgeId = await newEdge();
    const otherEdgeId = await newEdge();
    const route = (await t.api<Route>('POST', routes(edgeId), { match_type: 'exact_path', match: '/r' }))
      .body;
    expect(
      (await t.api('POST', routes('edghts_missing'), { match_type: 'exact_path', match: '/' })).status,
    ).toBe(404);
    expect((await t.api('GET', routes('edghts_missing'))).status).toBe(404);
    const wrongEdge = `${routes(otherEdgeId)}/${route.id}`;
    const got = await t.api('GET', wrongEdge);
    expect(got.status).toBe(404);
    expect(got.body.msg).toBe(
      `HTTPS edge route with id '${route.id}' not found on HTTPS edge '${otherEdgeId}'`,
    );
    expect((await t.api('PATCH', wrongEdge, { description: 'x' })).status).toBe(404);
    expect((await t.api('DELETE', wrongEdge)).status).toBe(404);
    expect((await t.api('PUT', `${wrongEdge}/compression`, {})).status).toBe(404);
    expect((await t.api('GET', `${wrongEdge}/compression`)).status).toBe(404);
    expect((await t.api('DELETE', `${wrongEdge}/compression`)).status).toBe(404);
    expect((await t.api('GET', `${routes(edgeId)}/edghtsrt_missing`)).status).toBe(404);
    // Nothing was changed through the wrong edge.
    expect((await t.api('GET', `${routes(edgeId)}/${route.id}`)).body).toEqual(route);
  });

  it('updates: fields and absent modules unchanged, present modules replaced, removal refused', async () => {
    const edgeId = await newEdge();
    const route = (
      await t.api<Route>('POST', routes(edgeId), {
        match_type: 'exact_path',
        match: '/u',
        backend: { backend_id: backendId },
        circuit_breaker: { num_buckets: 64, error_threshold_percentage: 0.25 },
      })
    ).body;
    const updated = await t.api<Route>('PATCH', `${routes(edgeId)}/${route.id}`, {
      description: 'now compressed',
      match_type: 'path_prefix',
      compression: {},
      circuit_breaker: { enabled: false },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body).toEqual({
      ...route,
      description: 'now compressed',
      match_type: 'path_prefix',
      compression: { enabled: true },
      // Replaced completely: the defaults apply again.
      circuit_breaker: {
        enabled: false,
        tripped_duration: 10,
        rolling_window: 10,
        num_buckets: 10,
        volume_threshold: 20,
        error_threshold_percentage: 0.5,
      },
    });
    const removal = await t.api('PATCH', `${routes(edgeId)}/${route.id}`, { backend: null });
    expect(removal.status).toBe(400);
    expect(removal.body.msg).toBe(
      `backend: a module cannot be removed through an update; use DELETE /edges/https/${edgeId}/routes/${route.id}/backend`,
    );
    const badRef = await t.api('PATCH', `${routes(edgeId)}/${route.id}`, {
      ip_restriction: { ip_policy_ids: ['ipp_missing'] },
    });
    expect(badRef.status).toBe(400);
    expect(badRef.body.msg).toMatch(/^ip_restriction\.ip_policy_ids\[0\]: no IP policy/);
    expect((await t.api('GET', `${routes(edgeId)}/${route.id}`)).body).toEqual(updated.body);
  });

  it('creates a route with modules set in the body, references checked', async () => {
    const edgeId = await newEdge();
    const created = await t.api<Route>('POST', routes(edgeId), {
      match_type: 'path_prefix',
      match: '/m',
      backend: { backend_id: backendId },
      ip_restriction: { ip_policy_ids: [policyId] },
      websocket_tcp_converter: { enabled: false },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.backend).toEqual({
      enabled: true,
      backend: { id: backendId, uri: `${t.baseUrl}/backends/tunnel_group/${backendId}` },
    });
    expect(created.body.ip_restriction).toEqual({
      enabled: true,
      ip_policies: [{ id: policyId, uri: `${t.baseUrl}/ip_policies/${policyId}` }],
    });
    expect(created.body.websocket_tcp_converter).toEqual({ enabled: false });
    const badBackend = await t.api('POST', routes(edgeId), {
      match_type: 'path_prefix',
      match: '/n',
      backend: { backend_id: 'bkdtg_missing' },
    });
    expect(badBackend.status).toBe(400);
    expect(badBackend.body.msg).toMatch(/^backend\.backend_id: no tunnel-group backend/);
    // Nothing was created by the refused request.
    const listed = await t.api<{ routes: Route[] }>('GET', routes(edgeId));
    expect(listed.body.routes.map((route) => route.match)).toEqual(['/m']);
  });

  it('deletes a route: 204, gone from the edge, a retried delete is a 404', async () => {
    const edgeId = await newEdge();
    const route = (await t.api<Route>('POST', routes(edgeId), { match_type: 'exact_path', match: '/d' }))
      .body;
    const deleted = await t.api('DELETE', `${routes(edgeId)}/${route.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await t.api('GET', `${routes(edgeId)}/${route.id}`)).status).toBe(404);
    expect((await t.api('GET', `/edges/https/${edgeId}`)).body.routes).toEqual([]);
    expect((await t.api('DELETE', `${routes(edgeId)}/${route.id}`)).status).toBe(404);
    // The selector is free again.
    expect((await t.api('POST', routes(edgeId), { match_type: 'exact_path', match: '/d' })).status).toBe(201);
  });

  it('records https_edge_route_* events, module changes as updates carrying the route', async () => {
    const edgeId = await newEdge();
    const route = (await t.api<Route>('POST', routes(edgeId), { match_type: 'exact_path', match: '/e' }))
      .body;
    const path = `${routes(edgeId)}/${route.id}`;
    await t.api('PATCH', path, { description: 'x' });
    expect((await t.api('PUT', `${path}/compression`, {})).status).toBe(200);
    const afterPut = (await t.api('GET', path)).body;
    expect(afterPut.compression).toEqual({ enabled: true });
    expect((await t.api('DELETE', `${path}/compression`)).status).toBe(204);
    const afterDelete = (await t.api('GET', path)).body;
    // Deleting a module that is not set: 204, no event.
    expect((await t.api('DELETE', `${path}/compression`)).status).toBe(204);
    expect((await t.api('DELETE', `${path}/saml`)).status).toBe(204);
    await t.api('DELETE', path);
    const events = await eventsOf(t, route.id);
    expect(events.map((event) => event.type)).toEqual([
      'https_edge_route_created.v0',
      'https_edge_route_updated.v0',
      'https_edge_route_updated.v0',
      'https_edge_route_updated.v0',
      'https_edge_route_deleted.v0',
    ]);
    expect(JSON.parse(events[2]?.payload ?? '')).toEqual({ object: afterPut });
    expect(JSON.parse(events[3]?.payload ?? '')).toEqual({ object: afterDelete });
  });

  it('accepts a deleted IP policy the route references already when its module is sent back (rule 1)', async () => {
    const edgeId = await newEdge();
    const gone = (await t.api('POST', '/ip_policies', {})).body.id as string;
    const route = (
      await t.api<Route>('POST', routes(edgeId), {
        match_type: 'exact_path',
        match: '/rule1',
        ip_restriction: { ip_policy_ids: [gone] },
      })
    ).body;
    expect((await t.api('DELETE', `/ip_policies/${gone}`)).status).toBe(204);
    const path = `${routes(edgeId)}/${route.id}`;
    const put = await t.api('PUT', `${path}/ip_restriction`, { ip_policy_ids: [gone] });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toEqual(route.ip_restriction);
    const patched = await t.api<Route>('PATCH', path, {
      ip_restriction: { ip_policy_ids: [gone, policyId] },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const other = await t.api('POST', routes(edgeId), {
      match_type: 'exact_path',
      match: '/rule1-other',
      ip_restriction: { ip_policy_ids: [gone] },
    });
    expect(other.status).toBe(400);
    expect(other.body.msg).toBe(`ip_restriction.ip_policy_ids[0]: no IP policy with id '${gone}' exists`);
  });

  it('lists the routes of one edge newest first across pages', async () => {
    const edgeId = await newEdge();
    const otherEdgeId = await newEdge();
    await t.api('POST', routes(otherEdgeId), { match_type: 'exact_path', match: '/other' });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (await t.api('POST', routes(edgeId), { match_type: 'exact_path', match: `/p${i}` })).body
          .id as string,
      );
    }
    const { seen, pages } = await walkPages<{ routes: Route[]; next_page_uri: string | null }>(
      t,
      `${routes(edgeId)}?limit=2`,
      'routes',
      (page) => {
        expect(Object.keys(page.body).sort()).toEqual(['next_page_uri', 'routes', 'uri']);
        expect((page.body as unknown as { uri: string }).uri).toBe(`${t.baseUrl}${routes(edgeId)}`);
        if (page.body.next_page_uri !== null) {
          expect(page.body.next_page_uri).toMatch(
            new RegExp(`^${t.baseUrl}${routes(edgeId)}\\?before_id=edghtsrt_\\w+&limit=2$`),
          );
        }
      },
    );
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
    const bad = await t.api('GET', `${routes(edgeId)}?limit=0`);
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toBe('limit: must be a whole number from 1 to 100');
  });

  it('replays an idempotent create instead of creating twice', async () => {
    const edgeId = await newEdge();
    const headers = { 'idempotency-key': `route-${edgeId}` };
    const body = { match_type: 'exact_path', match: '/once' };
    const first = await t.api('POST', routes(edgeId), body, { headers });
    const retry = await t.api('POST', routes(edgeId), body, { headers });
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
  });
});

describe('HttpsEdges and HttpsEdgeRoutes in the typed client', () => {
  it('drives edges, routes and modules through the client', async () => {
    const client = new EdgewardClient({ baseUrl: t.baseUrl, apiKey: ADMIN_KEY });
    try {
      const edge = await client.httpsEdges.create({ hostports: ['client.example.com:443'] });
      expect(edge.routes).toEqual([]);
      const termination = await client.httpsEdges.replaceModule(edge.id, 'tls_termination', {
        min_version: '1.3',
      });
      expect(termination).toEqual({ enabled: true, terminate_at: 'edge', min_version: '1.3' });
      await client.httpsEdges.deleteModule(edge.id, 'tls_termination');
      await expect(client.httpsEdges.getModule(edge.id, 'tls_termination')).rejects.toMatchObject({
        statusCode: 404,
      });

      const route = await client.httpsEdgeRoutes.create(edge.id, { match_type: 'path_prefix', match: '/c' });
      expect((await client.httpsEdgeRoutes.get(edge.id, route.id)).match).toBe('/c');
      expect((await client.httpsEdgeRoutes.update(edge.id, route.id, { description: 'd' })).description).toBe(
        'd',
      );
      const breaker = await client.httpsEdgeRoutes.replaceModule(edge.id, route.id, 'circuit_breaker', {
        num_buckets: 8,
      });
      expect(breaker.num_buckets).toBe(8);
      expect((await client.httpsEdgeRoutes.getModule(edge.id, route.id, 'circuit_breaker')).num_buckets).toBe(
        8,
      );
      await client.httpsEdgeRoutes.deleteModule(edge.id, route.id, 'circuit_breaker');
      await client.httpsEdgeRoutes.create(edge.id, { match_type: 'path_prefix', match: '/d' });
      const page = await client.httpsEdgeRoutes.list(edge.id, { limit: 1 });
      expect(page.routes).toHaveLength(1);
      expect(page.next_page_uri).not.toBeNull();
      const all: string[] = [];
      for await (const item of client.httpsEdgeRoutes.iterate(edge.id, { limit: 1 })) all.push(item.match);
      expect(all).toEqual(['/d', '/c']);
      await client.httpsEdgeRoutes.delete(edge.id, route.id);
      await expect(client.httpsEdgeRoutes.get(edge.id, route.id)).rejects.toMatchObject({ statusCode: 404 });
      expect((await client.httpsEdges.get(edge.id)).routes.map((item) => item.match)).toEqual(['/d']);
      await client.httpsEdges.delete(edge.id);
    } finally {
      await client.close();
    }
  });
});
