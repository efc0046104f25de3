import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgewardClient } from '../../src/client/index.js';
import { newId } from '../../src/crypto/ids.js';
import { eventsOf } from '../support/events.js';
import { countRows, walkPages } from '../support/paging.js';
import { ADMIN_KEY, idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

interface BackendWire {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata: string;
  labels: Record<string, string>;
  tunnels: { id: string; uri: string }[];
}
interface BackendListWire {
  backends: BackendWire[];
  uri: string;
  next_page_uri: string | null;
}

const PATH = '/backends/tunnel_group';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

async function create(body: Record<string, unknown>): Promise<BackendWire> {
  const created = await t.api<BackendWire>('POST', PATH, body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

async function get(id: string): Promise<BackendWire> {
  const fetched = await t.api<BackendWire>('GET', `${PATH}/${id}`);
  expect(fetched.status).toBe(200);
  return fetched.body;
}

/** A backend module naming `backendId`, as the edge routes store it. */
const backendModules = (backendId: string) =>
  JSON.stringify({ backend: { enabled: true, backend_id: backendId } });

describe('tunnel-group backends', () => {
  it('creates, reads, updates, lists and deletes with the wire shape', async () => {
    const created = await t.api<BackendWire>('POST', PATH, {
      description: 'web fleet',
      metadata: '{"owner":"web"}',
      labels: { app: 'web', 'edgeward.dev/region': 'eu' },
    });
    expect(created.status).toBe(201);
    const backend = created.body;
    expect(Object.keys(backend).sort()).toEqual([
      'created_at',
      'description',
      'id',
      'labels',
      'metadata',
      'tunnels',
      'uri',
    ]);
    expect(backend.id).toMatch(idPattern('bkdtg'));
    expect(backend.uri).toBe(`${t.baseUrl}${PATH}/${backend.id}`);
    expect(backend.created_at).toMatch(RFC3339_UTC);
    expect(backend.description).toBe('web fleet');
    expect(backend.metadata).toBe('{"owner":"web"}');
    expect(backend.labels).toEqual({ app: 'web', 'edgeward.dev/region': 'eu' });
    expect(backend.tunnels).toEqual([]);

    expect(await get(backend.id)).toEqual(backend);

    const described = await t.api<BackendWire>('PATCH', `${PATH}/${backend.id}`, { description: 'web' });
    expect(described.status).toBe(200);
    expect(described.body).toEqual({ ...backend, description: 'web' });

    // labels replace the whole set: `edgeward.dev/region` is gone afterwards.
    const relabelled = await t.api<BackendWire>('PATCH', `${PATH}/${backend.id}`, {
      labels: { app: 'api', tier: '1' },
    });
    expect(relabelled.status).toBe(200);
    expect(relabelled.body).toEqual({ ...backend, description: 'web', labels: { app: 'api', tier: '1' } });
    expect(await get(backend.id)).toEqual(relabelled.body);

    const listed = await t.api<BackendListWire>('GET', PATH);
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body).sort()).toEqual(['backends', 'next_page_uri', 'uri']);
    expect(listed.body.uri).toBe(`${t.baseUrl}${PATH}`);
    expect(listed.body.backends).toContainEqual(relabelled.body);

    const deleted = await t.api('DELETE', `${PATH}/${backend.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await t.api('GET', `${PATH}/${backend.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
  });

  it('defaults description and metadata to empty strings', async () => {
    const backend = await create({ labels: { app: 'x' } });
    expect(backend).toMatchObject({ description: '', metadata: '' });
  });

  it('validates labels, naming labels.<name>', async () => {
    const labelsOf = (count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`l${i}`, 'v']));
    const cases = [
      [{}, /^labels: is required/],
      [{ labels: {} }, /^labels: must have at least one label/],
      [{ labels: 'app=web' }, /^labels: must be an object of label names to string values/],
      [{ labels: ['app'] }, /^labels: must be an object/],
      [{ labels: null }, /^labels: /],
      [{ labels: { port: 8080 } }, /^labels\.port: must be a string/],
      [
        { labels: { ok: 'v', 'bad name': 'v' } },
        /^labels\.bad name: label name "bad name" must be 1 to 63 characters/,
      ],
      [{ labels: { 'app:web': 'v' } }, /^labels\.app:web: label name /],
      [{ labels: { '': 'v' } }, /^labels\.: label name "" must be 1 to 63/],
      [{ labels: { [`k${'x'.repeat(63)}`]: 'v' } }, /^labels\.kx{63}: label name /],
      [{ labels: { app: 'é'.repeat(128) } }, /^labels\.app: value must be at most 255 bytes/],
      [{ labels: labelsOf(65) }, /^labels: must have at most 64 labels/],
      [{ labels: { app: 'x' }, description: 'é'.repeat(128) }, /^description: must be at most 255 bytes/],
      [{ labels: { app: 'x' }, metadata: 'x'.repeat(4097) }, /^metadata: must be at most 4096 bytes/],
      [{ labels: { app: 'x' }, tunnels: [] }, /^tunnels: unknown field/],
    ] as const;
    for (const [body, message] of cases) {
      const response = await t.api('POST', PATH, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_100' });
      expect(response.body.msg, JSON.stringify(body)).toMatch(message);
    }

    const atLimits = await create({
      labels: {
        ...labelsOf(63),
        [`a.b-c_d/${'x'.repeat(55)}`]: 'é'.repeat(127),
      },
      description: 'x'.repeat(255),
      metadata: 'é'.repeat(2048),
    });
    expect(Object.keys(atLimits.labels)).toHaveLength(64);
    expect(atLimits.labels[`a.b-c_d/${'x'.repeat(55)}`]).toBe('é'.repeat(127));
    const emptyValue = await create({ labels: { canary: '' } });
    expect(emptyValue.labels).toEqual({ canary: '' });

    const backend = await create({ labels: { app: 'kept' } });
    for (const [body, message] of [
      ...cases.filter(([body]) => 'labels' in body),
      [{ labels: { app: 'x' }, uri: 'x' }, /^uri: unknown field/],
    ] as const) {
      const response = await t.api('PATCH', `${PATH}/${backend.id}`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg, JSON.stringify(body)).toMatch(message);
    }
    expect(await get(backend.id)).toEqual(backend);
  });

  it('answers 404 for unknown ids', async () => {
    const unknown = 'bkdtg_2aaaaaaaaaaaaaaaaaaaaaaaaaa';
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { description: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await t.api(method, `${PATH}/${unknown}`, body);
      expect(response.status, method).toBe(404);
      expect(response.body.msg).toContain(unknown);
    }
  });

  it('refuses to delete a backend an edge or route module references, and deletes it once unreferenced', async () => {
    const db = t.server.app.edgeward.db;
    const backend = await create({ labels: { app: 'guarded' } });
    const bystander = await create({ labels: { app: 'bystander' } });
    const now = '2024-01-01T00:00:00Z';
    const described = { created_at: now, description: '', metadata: '' };
    const edgeIds = { tls_edges: newId('edgtls'), https_edges: newId('edghts'), tcp_edges: newId('edgtcp') };
    const routeId = newId('edghtsrt');
    const holders = [
      ['tls_edges', edgeIds.tls_edges, 'TLS edge'],
      ['https_edges', edgeIds.https_edges, 'HTTPS edge'],
      ['tcp_edges', edgeIds.tcp_edges, 'TCP edge'],
      ['https_edge_routes', routeId, 'HTTPS edge route'],
    ] as const;

    // Each kind of holder on its own blocks the delete.
    for (const [table, id, kind] of holders) {
      if (table === 'https_edge_routes') {
        await db
          .insertInto(table)
          .values({
            id,
            ...described,
            edge_id: edgeIds.https_edges,
            match_type: 'path_prefix',
            match: '/',
            modules: backendModules(backend.id),
          })
          .execute();
      } else {
        await db
          .insertInto(table)
          .values({ id, ...described, hostports: '[]', modules: backendModules(backend.id) })
          .execute();
      }
      const refused = await t.api('DELETE', `${PATH}/${backend.id}`);
      expect(refused.status, table).toBe(409);
      expect(refused.body).toMatchObject({ error_code: 'ERR_EDGEWARD_502', status_code: 409 });
      expect(refused.body.msg).toBe(
        `id: tunnel-group backend ${backend.id} is used by the backend module of ${kind} ${id}; remove it there first`,
      );
      expect(await get(backend.id)).toEqual(backend);
      await db.deleteFrom(table).where('id', '=', id).execute();
    }

    // A module naming another backend does not block this one.
    await db
      .insertInto('tls_edges')
      .values({ id: edgeIds.tls_edges, ...described, hostports: '[]', modules: backendModules(bystander.id) })
      .execute();
    expect((await t.api('DELETE', `${PATH}/${backend.id}`)).status).toBe(204);
    expect((await t.api('GET', `${PATH}/${backend.id}`)).status).toBe(404);
    expect((await t.api('DELETE', `${PATH}/${bystander.id}`)).status).toBe(409);
    await db.updateTable('tls_edges').set({ modules: '{}' }).where('id', '=', edgeIds.tls_edges).execute();
    expect((await t.api('DELETE', `${PATH}/${bystander.id}`)).status).toBe(204);
  });

  it('looks through a stored policy nested deeper than bodies may now be, without running out of stack', async () => {
    const backend = await create({ labels: { app: 'deep' } });
    // Written as a server without the body depth limit stored it: log metadata 10,000 levels deep
    // whose innermost member is named like the backend (a name, not a reference to it).
    const levels = 10_000;
    const metadata = `${'{"a":'.repeat(levels)}{"${backend.id}":1}${'}'.repeat(levels)}`;
    const modules = `{"policy":{"enabled":true,"inbound":[{"name":"r","expressions":[],"actions":[{"type":"log","config":{"metadata":${metadata}}}]}],"outbound":[]}}`;
    const id = newId('edgtcp');
    await t.server.app.edgeward.db
      .insertInto('tcp_edges')
      .values({
        id,
        created_at: '2024-01-01T00:00:00Z',
        description: '',
        metadata: '',
        hostports: '[]',
        modules,
      })
      .execute();
    try {
      const deleted = await t.api('DELETE', `${PATH}/${backend.id}`);
      expect(deleted.status, deleted.text).toBe(204);
    } finally {
      await t.server.app.edgeward.db.deleteFrom('tcp_edges').where('id', '=', id).execute();
    }
  });

  it('pages the list newest first with absolute next_page_uri', async () => {
    const older = await create({ labels: { page: '1' } });
    const newer = await create({ labels: { page: '2' } });
    const page = await t.api<BackendListWire>('GET', `${PATH}?limit=1`);
    expect(page.body.backends.map((item) => item.id)).toEqual([newer.id]);
    expect(page.body.next_page_uri).toBe(`${t.baseUrl}${PATH}?before_id=${newer.id}&limit=1`);
    const next = await t.api<BackendListWire>('GET', page.body.next_page_uri as string);
    expect(next.body.backends.map((item) => item.id)).toEqual([older.id]);

    const { seen } = await walkPages<BackendListWire>(t, `${PATH}?limit=2`, 'backends');
    expect(seen.length).toBe(await countRows(t, 'tunnel_group_backends'));
    expect(seen).toEqual([...seen].sort().reverse());
  });

  it('replays an idempotent create and records created, updated and deleted events', async () => {
    const headers = { 'Idempotency-Key': `bkdtg-${Date.now()}` };
    const body = { labels: { app: 'events' } };
    const first = await t.api<BackendWire>('POST', PATH, body, { headers });
    const second = await t.api<BackendWire>('POST', PATH, body, { headers });
    expect(first.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');

    const id = first.body.id;
    await t.api('PATCH', `${PATH}/${id}`, { labels: { app: 'renamed' } });
    await t.api('DELETE', `${PATH}/${id}`);
    const events = await eventsOf(t, id);
    expect(events.map((event) => event.type)).toEqual([
      'tunnel_group_backend_created.v0',
      'tunnel_group_backend_updated.v0',
      'tunnel_group_backend_deleted.v0',
    ]);
    expect(JSON.parse(events[0]?.payload ?? '{}')).toEqual({ object: first.body });
    expect(JSON.parse(events[1]?.payload ?? '{}').object).toMatchObject({ id, labels: { app: 'renamed' } });
    expect(JSON.parse(events[2]?.payload ?? '{}')).toEqual({ object: { id } });
  });

  it('is reachable through the typed client', async () => {
    const client = new EdgewardClient({ baseUrl: t.baseUrl, apiKey: ADMIN_KEY });
    try {
      const created = await client.tunnelGroupBackends.create({ labels: { app: 'client' } });
      expect(created.uri).toBe(`${t.baseUrl}${PATH}/${created.id}`);
      const updated = await client.tunnelGroupBackends.update(created.id, { labels: { app: 'client2' } });
      expect(updated.labels).toEqual({ app: 'client2' });
      const ids: string[] = [];
      for await (const item of client.tunnelGroupBackends.iterate({ limit: 2 })) ids.push(item.id);
      expect(ids).toContain(created.id);
      await client.tunnelGroupBackends.delete(created.id);
      await expect(client.tunnelGroupBackends.get(created.id)).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await client.close();
    }
  });
});
