import { once } from 'node:events';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BIG_TEXT, eventually, headerOf, seenAt, useHarness } from '../support/https-modules-harness.js';

/**
 * HTTPS route modules that change traffic on its way, end to end: configured through the API,
 * applied by a real edge, asserted at the client (curl, ws) and at the service behind the agent.
 */
const h = useHarness();
let echo: TcpServer;
let echoPort: number;
/** Bytes the TCP echo service received, per connection. */
const echoed: Buffer[][] = [];

beforeAll(async () => {
  echo = createTcpServer((socket) => {
    const received: Buffer[] = [];
    echoed.push(received);
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      socket.write(chunk);
    });
    socket.on('error', () => {});
  });
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  echoPort = (echo.address() as { port: number }).port;
});

afterAll(() => echo?.close());

const ready = { match_type: 'exact_path', match: '/ready' } as const;

async function waitReady(host: string) {
  const result = await eventually(
    () => h.curl(host, '/ready'),
    (r) => r.status === 200,
  );
  expect(result.status, result.stderr).toBe(200);
}

describe('HTTPS route modules: traffic', () => {
  it('request_headers and response_headers: added and removed both ways, and updated with PUT', async () => {
    const { edge, routes } = await h.httpsEdge('headers.modules.test', [
      {
        match_type: 'path_prefix',
        match: '/',
        modules: {
          request_headers: { add: { 'X-Added-In': 'by the edge' }, remove: ['X-Client-Secret'] },
          response_headers: { add: { 'x-added-out': 'to the client' }, remove: ['X-Upstream-Internal'] },
        },
      },
    ]);
    const clientHeaders = [
      '-H',
      'X-Client-Secret: keep this from the service',
      '-H',
      'X-Client-Kept: kept',
      '-H',
      'X-Added-In: a client value the rule replaces',
      // Identity headers are the edge's to set: never a client's.
      '-H',
      'edgeward-auth-user-email: mallory@example.com',
    ];
    const answer = await eventually(
      () => h.curl('headers.modules.test', '/page', clientHeaders),
      (r) => r.status === 200,
    );
    expect(answer.status).toBe(200);
    expect(headerOf(answer, 'x-added-out')).toBe('to the client');
    expect(headerOf(answer, 'x-upstream-internal')).toBeUndefined();
    expect(headerOf(answer, 'x-upstream-kept')).toBe('kept');
    const [seen] = seenAt(h.seen, '/page');
    expect(seen?.headers['x-added-in']).toBe('by the edge');
    expect(seen?.headers['x-client-secret']).toBeUndefined();
    expect(seen?.headers['x-client-kept']).toBe('kept');
    expect(seen?.headers['edgeward-auth-user-email']).toBeUndefined();

    // A PUT replaces the module; the edge applies the new rules (and HTTP/1.1 bodies arrive whole).
    const put = await h.t.api('PUT', `/edges/https/${edge.id}/routes/${routes[0]?.id}/request_headers`, {
      add: { 'x-added-in': 'changed' },
    });
    expect(put.status, put.text).toBe(200);
    const changed = await eventually(
      async () => {
        await h.curl('headers.modules.test', '/changed', [
          '--http1.1',
          '--data-binary',
          'small body',
          ...clientHeaders,
        ]);
        return seenAt(h.seen, '/changed').at(-1);
      },
      (request) => request?.headers['x-added-in'] === 'changed',
    );
    expect(changed?.headers['x-added-in']).toBe('changed');
    // The new module has no remove list: the client's header now passes.
    expect(changed?.headers['x-client-secret']).toBe('keep this from the service');
    expect(changed?.body.toString()).toBe('small body');
  });

  it('compression: br for a client that accepts it, the decoded body unchanged; identity otherwise', async () => {
    await h.httpsEdge('compress.modules.test', [
      { match_type: 'path_prefix', match: '/', modules: { compression: {} } },
    ]);
    const compressed = await eventually(
      () => h.curl('compress.modules.test', '/big', ['--compressed']),
      (r) => r.status === 200,
    );
    expect(compressed.status).toBe(200);
    expect(headerOf(compressed, 'content-encoding')).toBe('br');
    expect(headerOf(compressed, 'vary')?.toLowerCase()).toContain('accept-encoding');
    expect(compressed.body).toBe(BIG_TEXT);
    // Bytes on the wire: far fewer than the text.
    const raw = await h.curl('compress.modules.test', '/big', ['-H', 'Accept-Encoding: gzip']);
    expect(headerOf(raw, 'content-encoding')).toBe('gzip');
    expect(Buffer.byteLength(raw.body, 'latin1')).toBeLessThan(BIG_TEXT.length / 5);

    const identity = await h.curl('compress.modules.test', '/big');
    expect(identity.status).toBe(200);
    expect(headerOf(identity, 'content-encoding')).toBeUndefined();
    expect(identity.body).toBe(BIG_TEXT);
    // The service sent the identity every time: compressing is the edge's work.
    expect(seenAt(h.seen, '/big').length).toBeGreaterThanOrEqual(3);
  });

  it('circuit_breaker: trips to 503 circuit-open without the service, then closes once it is healthy', async () => {
    const { routes } = await h.httpsEdge('breaker.modules.test', [
      {
        match_type: 'exact_path',
        match: '/flaky',
        modules: {
          circuit_breaker: {
            volume_threshold: 3,
            error_threshold_percentage: 0.5,
            tripped_duration: 1,
            rolling_window: 10,
          },
        },
      },
      ready,
    ]);
    await waitReady('breaker.modules.test');
    for (let attempt = 0; attempt < 3; attempt++) {
      expect((await h.curl('breaker.modules.test', '/flaky')).status).toBe(500);
    }
    expect(seenAt(h.seen, '/flaky')).toHaveLength(3);
    const open = await h.curl('breaker.modules.test', '/flaky');
    expect(open.status).toBe(503);
    expect(headerOf(open, 'edgeward-error')).toBe('circuit-open');
    const breakerGauge = async () =>
      (await h.edge.edge.metrics.circuitBreakerOpen.get()).values.find(
        (value) => value.labels.route_id === routes[0]?.id,
      )?.value;
    expect(await breakerGauge()).toBe(1);
    h.flaky.status = 200;
    expect((await h.curl('breaker.modules.test', '/flaky')).status, 'still tripped').toBe(503);
    expect(seenAt(h.seen, '/flaky')).toHaveLength(3);

    await new Promise((resolve) => setTimeout(resolve, 1100));
    const probe = await h.curl('breaker.modules.test', '/flaky');
    expect(probe.status).toBe(200);
    expect(probe.body).toBe('flaky: 200');
    expect((await h.curl('breaker.modules.test', '/flaky')).status).toBe(200);
    expect(seenAt(h.seen, '/flaky')).toHaveLength(5);
    expect(await breakerGauge()).toBe(0);
  });

  it('websocket_tcp_converter: WebSocket messages carried as bytes to a TCP service; plain HTTP gets 426', async () => {
    await h.httpsEdge(
      'wstcp.modules.test',
      [{ match_type: 'path_prefix', match: '/', modules: { websocket_tcp_converter: {} } }],
      { forward: `tcp://127.0.0.1:${echoPort}` },
    );
    const plain = await eventually(
      () => h.curl('wstcp.modules.test', '/socket'),
      (r) => r.status === 426,
    );
    expect(plain.status).toBe(426);
    expect(headerOf(plain, 'edgeward-error')).toBe('websocket-required');
    expect(echoed, 'no TCP connection for a plain request').toHaveLength(0);

    const port = h.edge.edge.tlsPort;
    // ws hands these to tls.connect; its types leave out `servername`.
    const tlsOptions = { servername: 'wstcp.modules.test', rejectUnauthorized: false };
    const socket = new WebSocket(`wss://127.0.0.1:${port}/socket`, {
      headers: { host: `wstcp.modules.test:${port}` },
      ...(tlsOptions as WebSocket.ClientOptions),
    });
    await once(socket, 'open');
    const binary = Buffer.from([0, 1, 2, 253, 254, 255, 10, 13]);
    const replies: Buffer[] = [];
    socket.on('message', (data: Buffer) => replies.push(data));
    socket.send('hello over tcp');
    socket.send(binary);
    const expected = Buffer.concat([Buffer.from('hello over tcp'), binary]);
    await eventually(
      async () => Buffer.concat(replies),
      (bytes) => bytes.length >= expected.length,
    );
    expect(Buffer.concat(replies).equals(expected)).toBe(true);
    // The service got the payloads as bytes: no HTTP, no WebSocket framing.
    expect(echoed).toHaveLength(1);
    expect(Buffer.concat(echoed[0] ?? []).equals(expected)).toBe(true);
    socket.close();
    await once(socket, 'close');
  });

  it('policy: deny on a CEL header test, add-headers both ways, redirect, rate-limit; unknown actions refused', async () => {
    const policy = {
      inbound: [
        {
          name: 'blocked clients',
          expressions: ["'x-block' in req.headers && req.headers['x-block'][0] == 'yes'"],
          actions: [{ type: 'deny', config: { status_code: 451 } }],
        },
        {
          name: 'moved pages',
          expressions: ["req.path.startsWith('/old/')"],
          actions: [
            { type: 'redirect', config: { from: '/old/([a-z]+)$', to: '/new/$1', status_code: 301 } },
          ],
        },
        {
          name: 'limited',
          expressions: ["req.path == '/limited'"],
          actions: [
            {
              type: 'rate-limit',
              config: {
                name: 'per client',
                algorithm: 'sliding_window',
                capacity: 3,
                rate: '60s',
                bucket_key: ['conn.client_ip'],
              },
            },
          ],
        },
        {
          name: 'tag',
          actions: [{ type: 'add-headers', config: { headers: { 'x-policy-in': 'tagged' } } }],
        },
      ],
      outbound: [
        {
          name: 'tag responses',
          expressions: ['res.status_code == 200'],
          actions: [{ type: 'add-headers', config: { headers: { 'x-policy-out': 'seen' } } }],
        },
      ],
    };
    const { edge } = await h.httpsEdge('policy.modules.test', [
      { match_type: 'path_prefix', match: '/', modules: { policy } },
    ]);
    const tagged = await eventually(
      () => h.curl('policy.modules.test', '/tagged'),
      (r) => r.status === 200,
    );
    expect(headerOf(tagged, 'x-policy-out')).toBe('seen');
    expect(seenAt(h.seen, '/tagged')[0]?.headers['x-policy-in']).toBe('tagged');

    const denied = await h.curl('policy.modules.test', '/blocked', ['-H', 'X-Block: yes']);
    expect(denied.status).toBe(451);
    expect(headerOf(denied, 'x-policy-out')).toBeUndefined();
    expect((await h.curl('policy.modules.test', '/not-blocked', ['-H', 'X-Block: no'])).status).toBe(200);

    const port = h.edge.edge.tlsPort;
    const moved = await h.curl('policy.modules.test', '/old/page');
    expect(moved.status).toBe(301);
    expect(headerOf(moved, 'location')).toBe(`https://policy.modules.test:${port}/new/page`);

    const limited: number[] = [];
    for (let attempt = 0; attempt < 4; attempt++) {
      limited.push((await h.curl('policy.modules.test', '/limited')).status);
    }
    expect(limited).toEqual([200, 200, 200, 429]);
    const over = await h.curl('policy.modules.test', '/limited');
    expect(over.status).toBe(429);
    expect(Number(headerOf(over, 'retry-after'))).toBeGreaterThan(0);

    // Denied, redirected and limited requests never reached the service.
    expect(h.seen.map((request) => request.url).filter((url) => url !== '/tagged')).toEqual([
      '/not-blocked',
      '/limited',
      '/limited',
      '/limited',
    ]);

    const unknown = await h.t.api('POST', `/edges/https/${edge.id}/routes`, {
      match_type: 'exact_path',
      match: '/unknown',
      policy: { inbound: [{ name: 'teleport', actions: [{ type: 'teleport' }] }] },
    });
    expect(unknown.status).toBe(400);
  });
});
