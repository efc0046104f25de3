import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/crypto/ids.js';
import { ApiError } from '../../src/server/errors/api-error.js';
import { insertWithFreeAddr } from '../../src/server/routes/reserved-addrs.js';
import { idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

interface ReservedAddrWire {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata: string;
  addr: string;
  region: string;
  endpoint_configuration: null | { id: string; uri: string };
}
interface ReservedAddrListWire {
  reserved_addrs: ReservedAddrWire[];
  uri: string;
  next_page_uri: string | null;
}

const REGIONS = ['au', 'eu', 'ap', 'us', 'jp', 'in', 'sa'];
const addrPattern = (region: string) => new RegExp(`^${region}\\.tcp\\.edgeward\\.dev:(\\d{5})$`);

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

function portOf(addr: string): number {
  return Number(addr.slice(addr.lastIndexOf(':') + 1));
}

async function create(body: Record<string, unknown> = {}): Promise<ReservedAddrWire> {
  const created = await t.api<ReservedAddrWire>('POST', '/reserved_addrs', body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

describe('reserved addresses', () => {
  it('creates in region us by default and reads, updates, lists and deletes with the spec wire shape', async () => {
    const created = await t.api<ReservedAddrWire>('POST', '/reserved_addrs', {
      description: 'ssh bastion',
      metadata: '{"env":"prod"}',
    });
    expect(created.status).toBe(201);
    const ra = created.body;
    expect(Object.keys(ra).sort()).toEqual([
      'addr',
      'created_at',
      'description',
      'endpoint_configuration',
      'id',
      'metadata',
      'region',
      'uri',
    ]);
    expect(ra.id).toMatch(idPattern('ra'));
    expect(ra.uri).toBe(`${t.baseUrl}/reserved_addrs/${ra.id}`);
    expect(ra.created_at).toMatch(RFC3339_UTC);
    expect(ra.description).toBe('ssh bastion');
    expect(ra.metadata).toBe('{"env":"prod"}');
    expect(ra.region).toBe('us');
    expect(ra.addr).toMatch(addrPattern('us'));
    expect(portOf(ra.addr)).toBeGreaterThanOrEqual(10000);
    expect(portOf(ra.addr)).toBeLessThanOrEqual(65535);
    expect(ra.endpoint_configuration).toBeNull();

    const fetched = await t.api<ReservedAddrWire>('GET', `/reserved_addrs/${ra.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(ra);

    const patched = await t.api<ReservedAddrWire>('PATCH', `/reserved_addrs/${ra.id}`, {
      description: 'bastion',
      metadata: '',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...ra, description: 'bastion', metadata: '' });

    const listed = await t.api<ReservedAddrListWire>('GET', '/reserved_addrs');
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body).sort()).toEqual(['next_page_uri', 'reserved_addrs', 'uri']);
    expect(listed.body.uri).toBe(`${t.baseUrl}/reserved_addrs`);
    expect(listed.body.reserved_addrs).toContainEqual(patched.body);

    const deleted = await t.api('DELETE', `/reserved_addrs/${ra.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await t.api('GET', `/reserved_addrs/${ra.id}`)).status).toBe(404);
  });

  it('creates in every allowed region and rejects any other, naming region', async () => {
    for (const region of REGIONS) {
      const ra = await create({ region });
      expect(ra.region).toBe(region);
      expect(ra.addr).toMatch(addrPattern(region));
    }
    for (const region of ['US', 'mars', '', 7, null]) {
      const response = await t.api('POST', '/reserved_addrs', { region });
      expect(response.status, String(region)).toBe(400);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_100' });
      expect(response.body.msg).toMatch(/^region: must be one of "au", "eu", "ap", "us", "jp", "in", "sa"/);
    }
  });

  it('gives 50 creations 50 distinct addresses', async () => {
    const addrs = new Set<string>();
    for (let i = 0; i < 50; i++) addrs.add((await create({ region: 'eu' })).addr);
    expect(addrs.size).toBe(50);
  });

  it('retries another port when the drawn address is taken, in the same transaction', async () => {
    const db = t.server.app.edgeward.db;
    const existing = await create({ region: 'jp' });
    const taken = portOf(existing.addr);
    const used = new Set(
      (await db.selectFrom('reserved_addrs').select('addr').execute()).map((row) => row.addr),
    );
    let free = 10000;
    while (used.has(`jp.tcp.edgeward.dev:${free}`)) free++;
    /** A new jp reservation in `range`, each random port drawn by `draw`. */
    const insertDrawing = (range: { min: number; max: number }, draw: () => number) =>
      db.transaction().execute((trx) =>
        insertWithFreeAddr(
          trx,
          {
            id: newId('ra'),
            created_at: '2024-01-01T00:00:00Z',
            description: '',
            metadata: '',
            region: 'jp',
            endpoint_configuration_id: null,
          },
          'tcp.edgeward.dev',
          range,
          draw,
        ),
      );
    const draws = [taken, taken, free];
    const row = await insertDrawing({ min: 10000, max: 65535 }, () => draws.shift() as number);
    expect(draws).toEqual([]);
    expect(row.addr).toBe(`jp.tcp.edgeward.dev:${free}`);
    const fetched = await t.api<ReservedAddrWire>('GET', `/reserved_addrs/${row.id}`);
    expect(fetched.body.addr).toBe(`jp.tcp.edgeward.dev:${free}`);
    // The existing reservation was not touched.
    expect((await t.api<ReservedAddrWire>('GET', `/reserved_addrs/${existing.id}`)).body).toEqual(existing);

    // Every random draw hits a reserved port.
    const insertWhenDrawsHit = (range: { min: number; max: number }) => insertDrawing(range, () => taken);
    // Draws that keep missing do not fail a create while the range has a free port: it is read.
    const afterDraws = await insertWhenDrawsHit({
      min: Math.min(taken, free),
      max: Math.max(taken, free) + 1,
    });
    expect(portOf(afterDraws.addr)).not.toBe(taken);
    expect(portOf(afterDraws.addr)).not.toBe(free);
    // Only a range whose every port is reserved refuses, naming the field.
    const exhausted = insertWhenDrawsHit({ min: taken, max: taken });
    await expect(exhausted).rejects.toSatisfy(
      (error: unknown) =>
        error instanceof ApiError && error.code === 'ERR_EDGEWARD_900' && /^region: /.test(error.message),
    );
  });

  it('accepts a null or empty endpoint_configuration_id and rejects any id as a missing reference', async () => {
    const ra = await create({ region: 'ap' });
    for (const value of [null, '']) {
      const response = await t.api<ReservedAddrWire>('PATCH', `/reserved_addrs/${ra.id}`, {
        endpoint_configuration_id: value,
        description: `cleared with ${JSON.stringify(value)}`,
      });
      expect(response.status, String(value)).toBe(200);
      expect(response.body).toEqual({ ...ra, description: `cleared with ${JSON.stringify(value)}` });
    }
    const missing = await t.api('PATCH', `/reserved_addrs/${ra.id}`, {
      endpoint_configuration_id: 'ec_2aaaaaaaaaaaaaaaaaaaaaaaaaa',
      description: 'must not be applied',
    });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error_code: 'ERR_EDGEWARD_103', status_code: 400 });
    expect(missing.body.msg).toBe(
      "endpoint_configuration_id: no endpoint configuration with id 'ec_2aaaaaaaaaaaaaaaaaaaaaaaaaa' exists",
    );
    const after = await t.api<ReservedAddrWire>('GET', `/reserved_addrs/${ra.id}`);
    expect(after.body.description).toBe('cleared with ""');
    const wrongType = await t.api('PATCH', `/reserved_addrs/${ra.id}`, { endpoint_configuration_id: 5 });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.msg).toMatch(/^endpoint_configuration_id: must be a string/);
  });

  it('keeps region and addr immutable and validates limits and unknown fields, naming the field', async () => {
    const ra = await create();
    for (const [body, message] of [
      [{ region: 'eu' }, /^region: unknown field/],
      [{ addr: 'us.tcp.edgeward.dev:10000' }, /^addr: unknown field/],
      [{ description: 'é'.repeat(128) }, /^description: must be at most 255 bytes/],
      [{ metadata: 'x'.repeat(4097) }, /^metadata: must be at most 4096 bytes/],
    ] as const) {
      const response = await t.api('PATCH', `/reserved_addrs/${ra.id}`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg).toMatch(message);
    }
    expect((await t.api<ReservedAddrWire>('GET', `/reserved_addrs/${ra.id}`)).body).toEqual(ra);

    for (const [body, message] of [
      [{ addr: 'us.tcp.edgeward.dev:10000' }, /^addr: unknown field/],
      [{ endpoint_configuration_id: '' }, /^endpoint_configuration_id: unknown field/],
      [{ description: 'é'.repeat(128) }, /^description: must be at most 255 bytes/],
      [{ metadata: 'x'.repeat(4097) }, /^metadata: must be at most 4096 bytes/],
    ] as const) {
      const response = await t.api('POST', '/reserved_addrs', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.msg).toMatch(message);
    }
    const atLimit = await create({ description: 'x'.repeat(255), metadata: 'é'.repeat(2048) });
    expect(atLimit.metadata).toBe('é'.repeat(2048));
  });

  it('answers 404 for unknown ids and pages the list', async () => {
    const unknown = 'ra_2aaaaaaaaaaaaaaaaaaaaaaaaaa';
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { description: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await t.api(method, `/reserved_addrs/${unknown}`, body);
      expect(response.status, method).toBe(404);
      expect(response.body.msg).toContain(unknown);
    }
    const older = await create();
    const newer = await create();
    const page = await t.api<ReservedAddrListWire>('GET', '/reserved_addrs?limit=1');
    expect(page.body.reserved_addrs.map((ra) => ra.id)).toEqual([newer.id]);
    expect(page.body.next_page_uri).toBe(`${t.baseUrl}/reserved_addrs?before_id=${newer.id}&limit=1`);
    const next = await t.api<ReservedAddrListWire>('GET', page.body.next_page_uri as string);
    expect(next.body.reserved_addrs.map((ra) => ra.id)).toEqual([older.id]);
  });

  it('replays an idempotent create with the same address', async () => {
    const headers = { 'Idempotency-Key': `ra-${Date.now()}` };
    const first = await t.api<ReservedAddrWire>('POST', '/reserved_addrs', { region: 'sa' }, { headers });
    const second = await t.api<ReservedAddrWire>('POST', '/reserved_addrs', { region: 'sa' }, { headers });
    expect(first.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });

  it("gives new addresses ports in the server's --tcp-port-range, which edges are told to serve", async () => {
    const narrow = await startTestServer({ tcpPortRange: { min: 20000, max: 20019 } });
    try {
      const ports: number[] = [];
      // Every port of the range, though random draws alone would often miss the last free ones.
      for (let i = 0; i < 20; i++) {
        const response = await narrow.api('POST', '/reserved_addrs', {});
        expect(response.status, response.text).toBe(201);
        ports.push(Number(String(response.body.addr).split(':').pop()));
      }
      expect(ports.every((port) => port >= 20000 && port <= 20019)).toBe(true);
      expect(new Set(ports).size).toBe(20);
      const full = await narrow.api('POST', '/reserved_addrs', {});
      expect(full.body.msg).toBe(
        "region: every port of 20000-20019 is reserved in region 'us'; release an address or widen the server's --tcp-port-range",
      );
    } finally {
      await narrow.stop();
    }
  });
});
