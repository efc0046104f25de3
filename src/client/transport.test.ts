import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EdgewardApiError, EdgewardTransportError } from './errors.js';
import { Transport } from './transport.js';

type Reply = { status: number; headers?: Record<string, string>; body?: unknown; raw?: string };

/** A real loopback HTTP server that answers from a script, recording what it received. */
async function scriptedServer(replies: Reply[]) {
  const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const reply = replies[Math.min(seen.length - 1, replies.length - 1)] ?? { status: 500 };
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(reply.raw ?? (reply.body === undefined ? '' : JSON.stringify(reply.body)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { seen, url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}

const error = (status: number, code: string) => ({
  error_code: code,
  status_code: status,
  msg: 'limit: too many',
  details: { operation_id: 'op_123' },
});

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanup) await fn();
  cleanup = [];
});

async function setup(replies: Reply[]) {
  const server = await scriptedServer(replies);
  const transport = new Transport({
    baseUrl: server.url,
    apiKey: 'k',
    retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2000 },
  });
  cleanup.push(() => transport.close(), server.close);
  return { server, transport };
}

describe('Transport', () => {
  it('sends auth, version and idempotency headers and parses JSON', async () => {
    const { server, transport } = await setup([{ status: 201, body: { id: 'x' } }]);
    const result = await transport.send('POST', '/things', { body: { a: 1 }, idempotencyKey: 'idem-1' });
    expect(result).toEqual({ id: 'x' });
    expect(server.seen[0]?.headers.authorization).toBe('Bearer k');
    expect(server.seen[0]?.headers['svc-version']).toBe('2');
    expect(server.seen[0]?.headers['idempotency-key']).toBe('idem-1');
    expect(server.seen[0]?.body).toBe('{"a":1}');
  });

  it('sends the Idempotency-Key idempotencyKeyOf derives, the same on every attempt', async () => {
    const server = await scriptedServer([
      { status: 503, body: error(503, 'ERR_EDGEWARD_800') },
      { status: 201, body: { id: 'x' } },
    ]);
    const transport = new Transport({
      baseUrl: server.url,
      apiKey: 'k',
      retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 10 },
      idempotencyKeyOf: (key, request) =>
        `${key}-${request.method}-${request.path}-${JSON.stringify(request.body)}`,
    });
    cleanup.push(() => transport.close(), server.close);
    await transport.send('POST', '/things', { body: { a: 1 }, idempotencyKey: 'idem-1' });
    expect(server.seen.map((seen) => seen.headers['idempotency-key'])).toEqual([
      'idem-1-POST-/things-{"a":1}',
      'idem-1-POST-/things-{"a":1}',
    ]);
  });

  it('retries 429 honouring Retry-After, then succeeds', async () => {
    const { server, transport } = await setup([
      { status: 429, headers: { 'retry-after': '1' }, body: error(429, 'ERR_EDGEWARD_700') },
      { status: 200, body: { ok: true } },
    ]);
    const started = Date.now();
    expect(await transport.send('GET', '/things')).toEqual({ ok: true });
    expect(server.seen).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('tells onResponse the Retry-After of a 429, so a shared limiter can pause', async () => {
    const server = await scriptedServer([
      { status: 429, headers: { 'retry-after': '2' }, body: error(429, 'ERR_EDGEWARD_700') },
    ]);
    const seen: Array<number | undefined> = [];
    const transport = new Transport({
      baseUrl: server.url,
      apiKey: 'k',
      retry: { maxAttempts: 1 },
      onResponse: (info) => seen.push(info.retryAfterMs),
    });
    cleanup.push(() => transport.close(), server.close);
    await expect(transport.send('GET', '/x')).rejects.toBeInstanceOf(EdgewardApiError);
    expect(seen).toEqual([2000]);
  });

  it('names what an Idempotency-Key made before (409 ERR_EDGEWARD_500), and nothing for other errors', async () => {
    const reused = {
      ...error(409, 'ERR_EDGEWARD_500'),
      details: { operation_id: 'op_1', resource_id: 'ipp_1' },
    };
    const { transport } = await setup([
      { status: 409, body: reused },
      { status: 409, body: { ...error(409, 'ERR_EDGEWARD_501'), details: { operation_id: 'op_2' } } },
    ]);
    const first = (await transport
      .send('POST', '/x', { body: {} })
      .catch((e: unknown) => e)) as EdgewardApiError;
    expect(first.madeByKeyBefore).toBe('ipp_1');
    const second = (await transport
      .send('POST', '/x', { body: {} })
      .catch((e: unknown) => e)) as EdgewardApiError;
    expect(second.madeByKeyBefore).toBeUndefined();
  });

  it('gives up after maxAttempts on 503 with a typed error', async () => {
    const { server, transport } = await setup([{ status: 503, body: error(503, 'ERR_EDGEWARD_800') }]);
    const failure = await transport.send('GET', '/things').catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(EdgewardApiError);
    expect(failure).toMatchObject({ statusCode: 503, errorCode: 'ERR_EDGEWARD_800', operationId: 'op_123' });
    expect(server.seen).toHaveLength(3);
  });

  it('does not retry a POST without an idempotency key, nor a 400', async () => {
    const { server, transport } = await setup([{ status: 503, body: error(503, 'ERR_EDGEWARD_800') }]);
    await expect(transport.send('POST', '/things', { body: {} })).rejects.toBeInstanceOf(EdgewardApiError);
    expect(server.seen).toHaveLength(1);
    const second = await setup([{ status: 400, body: error(400, 'ERR_EDGEWARD_100') }]);
    const failure = (await second.transport.send('GET', '/x').catch((e: unknown) => e)) as EdgewardApiError;
    expect(failure.isTerminal).toBe(true);
    expect(second.server.seen).toHaveLength(1);
  });

  it('follows an absolute next_page_uri on the configured origin only, so the key never leaves it', async () => {
    const { server, transport } = await setup([{ status: 200, body: { ok: true } }]);
    await transport.send('GET', 'http://attacker.example:1/ip_policies?before_id=x&limit=2');
    expect(server.seen[0]?.url).toBe('/ip_policies?before_id=x&limit=2');
  });

  it('turns a non-JSON 2xx into a transport error', async () => {
    const { transport } = await setup([{ status: 200, raw: '<html>proxy login</html>' }]);
    await expect(transport.send('GET', '/x')).rejects.toBeInstanceOf(EdgewardTransportError);
  });

  it('reports a refused connection as a transport error after retries', async () => {
    const transport = new Transport({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'k',
      retry: { maxAttempts: 2, baseDelayMs: 1 },
    });
    cleanup.push(() => transport.close());
    await expect(transport.send('GET', '/things')).rejects.toBeInstanceOf(EdgewardTransportError);
  });

  it('aborts every request with the client-wide signal: one waiting in a retry, and any later one', async () => {
    const server = await scriptedServer([
      { status: 503, headers: { 'retry-after': '30' }, body: error(503, 'X') },
    ]);
    const abort = new AbortController();
    const transport = new Transport({
      baseUrl: server.url,
      apiKey: 'k',
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 60_000 },
      signal: abort.signal,
    });
    cleanup.push(() => transport.close(), server.close);
    const waiting = transport.send('GET', '/things/x');
    while (server.seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    abort.abort(new Error('leadership lost'));
    await expect(waiting).rejects.toThrow();
    await expect(transport.send('GET', '/things/y')).rejects.toThrow('leadership lost');
    expect(server.seen.map((seen) => seen.url)).toEqual(['/things/x']);
  });
});
