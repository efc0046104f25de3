import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/paging.js';
import { ADMIN_KEY, startTestServer, type TestServer } from '../support/server.js';

/**
 * Bodies no well-behaved client sends, checked once for every route by the JSON body parser: bytes
 * that are not UTF-8, strings that are not Unicode (an unpaired surrogate escape), and arrays or
 * objects nested deeper than any walk over a body should have to go. Each is a 400 that stores
 * nothing; none is a 500.
 */

type Json = Record<string, unknown>;

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

/** One request over a bare socket, its body's bytes exactly as given: no client re-encodes them. */
async function rawRequest(
  method: string,
  path: string,
  body: Buffer,
): Promise<{ status: number; body: Json }> {
  const { hostname, port, host } = new URL(t.baseUrl);
  const socket = connect(Number(port), hostname);
  const head = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${host}`,
    `Authorization: Bearer ${ADMIN_KEY}`,
    'Svc-Version: 2',
    'Content-Type: application/json',
    `Content-Length: ${body.length}`,
    'Connection: close',
  ].join('\r\n');
  // Written, not ended: the server answers `Connection: close` and then closes the socket itself.
  socket.write(Buffer.concat([Buffer.from(`${head}\r\n\r\n`, 'latin1'), body]));
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const answer = Buffer.concat(chunks).toString('utf8');
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
  return { status, body: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Json };
}

/** `{"description":"<bytes>"}` as raw bytes. */
const describedAs = (bytes: number[]) =>
  Buffer.concat([Buffer.from('{"description":"'), Buffer.from(bytes), Buffer.from('"}')]);

describe('request bodies that are not UTF-8', () => {
  it('refuses every kind of malformed UTF-8 with a 400 and stores nothing', async () => {
    const before = await countRows(t, 'ip_policies');
    const malformed: Array<[string, number[]]> = [
      ['Latin-1 é', [0x63, 0x61, 0x66, 0xe9]],
      ['a lone continuation byte', [0x61, 0x80, 0x62]],
      ['an overlong encoding of /', [0xc0, 0xaf]],
      ['a surrogate encoded as UTF-8 (CESU-8)', [0xed, 0xa0, 0x80]],
      ['a sequence cut short', [0x61, 0xe2, 0x82]],
      ['a byte UTF-8 never uses', [0xff]],
    ];
    for (const [what, bytes] of malformed) {
      const response = await rawRequest('POST', '/ip_policies', describedAs(bytes));
      expect(response.status, what).toBe(400);
      expect(response.body, what).toMatchObject({
        error_code: 'ERR_EDGEWARD_102',
        msg: 'body: not valid JSON (the text is not UTF-8)',
      });
    }
    expect(await countRows(t, 'ip_policies')).toBe(before);
  });

  it('keeps accepting UTF-8 text, with or without a byte order mark, and reads it back as sent', async () => {
    const text = 'café ☃ 😀';
    for (const body of [
      Buffer.from(JSON.stringify({ description: text })),
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ description: text }))]),
    ]) {
      const created = await rawRequest('POST', '/ip_policies', body);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.description).toBe(text);
      const read = await t.api('GET', `/ip_policies/${created.body.id as string}`);
      expect(read.body.description).toBe(text);
    }
  });
});

describe('strings that are not Unicode', () => {
  const SURROGATE = 'must be well-formed Unicode (no unpaired surrogate such as \\ud800)';

  it('refuses an unpaired surrogate escape anywhere in a body, naming the field, and stores nothing', async () => {
    const before = await countRows(t, 'ip_policies');
    const cases: Array<[string, string, string]> = [
      ['/ip_policies', '{"description":"x\\ud800y"}', `description: ${SURROGATE}`],
      ['/ip_policies', '{"description":"a low half alone \\uDFFF"}', `description: ${SURROGATE}`],
      ['/ip_policies', '{"metadata":"halves reversed \\udc00\\ud800"}', `metadata: ${SURROGATE}`],
      ['/ip_policies', '{"description":"x","\\ud800":1}', `body: member names ${SURROGATE}`],
      ['/credentials', '{"acl":["bind:a.example","bind:\\ud83d.example"]}', `acl[1]: ${SURROGATE}`],
    ];
    for (const [path, rawBody, message] of cases) {
      const response = await t.api('POST', path, undefined, { rawBody });
      expect(response.status, rawBody).toBe(400);
      expect(response.body, rawBody).toMatchObject({ error_code: 'ERR_EDGEWARD_100', msg: message });
    }
    expect(await countRows(t, 'ip_policies')).toBe(before);
  });

  it('accepts surrogate pairs and an escaped backslash before a u, answering what it stores', async () => {
    for (const [rawBody, description] of [
      ['{"description":"\\ud83d\\ude00"}', '😀'],
      ['{"description":"\\\\ud800"}', '\\ud800'],
    ] as const) {
      const created = await t.api('POST', '/ip_policies', undefined, { rawBody });
      expect(created.status, rawBody).toBe(201);
      expect(created.body.description).toBe(description);
      expect((await t.api('GET', `/ip_policies/${created.body.id as string}`)).body).toEqual(created.body);
    }
  });
});

describe('bodies nested past the depth limit (64)', () => {
  const TOO_DEEP = 'nests deeper than 64 levels of arrays and objects, the most a request body may have';
  const nestedArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

  it('refuses them with a 400 naming where, at every depth up to the largest body that fits in 1 MiB', async () => {
    // A member's arrays start at the body's 2nd level: 64 of them go one past the limit.
    for (const levels of [64, 3_800, 100_000]) {
      const rawBody = `{"description":"x","extra":${nestedArrays(levels)}}`;
      const response = await t.api('POST', '/ip_policies', undefined, { rawBody });
      expect(response.status, `${levels} levels`).toBe(400);
      expect(response.body).toMatchObject({
        error_code: 'ERR_EDGEWARD_100',
        msg: `extra${'[0]'.repeat(63)}: ${TOO_DEEP}`,
      });
    }
    // Within the limit, the route's own validation speaks.
    const within = await t.api('POST', '/ip_policies', undefined, {
      rawBody: `{"description":"x","extra":${nestedArrays(63)}}`,
    });
    expect(within.body.msg).toBe('extra: unknown field');
    // 524,287 levels: the most 1 MiB can hold.
    const deepest = await t.api('POST', '/ip_policies', undefined, {
      rawBody: nestedArrays((1024 * 1024 - 2) / 2),
    });
    expect(deepest.status).toBe(400);
    expect(deepest.body.msg).toBe(`body${'[0]'.repeat(64)}: ${TOO_DEEP}`);
  });

  it('cuts a path 64 levels deep under long names rather than quoting it whole', async () => {
    const response = await t.api('POST', '/ip_policies', undefined, {
      rawBody: `${'{"a_long_member_name":'.repeat(1_000)}1${'}'.repeat(1_000)}`,
    });
    expect(response.status).toBe(400);
    const msg = response.body.msg as string;
    const path = Array(64).fill('a_long_member_name').join('.');
    expect(msg).toBe(
      `${path.slice(0, 200)}…: nests deeper than 64 levels of arrays and objects, the most a request body may have`,
    );
  });
});
