import { describe, expect, it } from 'vitest';
import { compilePolicy } from './compile.js';
import type { PolicyDocument, PolicyLogEntry, PolicyRequest } from './types.js';

const REQUEST: PolicyRequest = {
  method: 'GET',
  url: 'http://app.example.com/old/items?page=2',
  path: '/old/items',
  query: 'page=2',
  host: 'app.example.com',
  headers: { 'user-agent': 'curl/8.5' },
  clientIp: '192.0.2.10',
  clientPort: 40000,
};
const RESPONSE = { status: 200, headers: { server: 'upstream' } };

type Action = { type: string; config?: Record<string, unknown> | null };

function http(module: PolicyDocument, logs: PolicyLogEntry[] = []) {
  return compilePolicy(module, { phase: 'http', onLog: (entry) => logs.push(entry) });
}

/** One rule, always applying, with `actions`. */
const inbound = (...actions: Action[]) => http({ inbound: [{ name: 'r', expressions: [], actions }] });
const outbound = (...actions: Action[]) => http({ outbound: [{ name: 'r', expressions: [], actions }] });

describe('inbound actions', () => {
  it('deny: 403 by default, or the status given', () => {
    expect(inbound({ type: 'deny' }).inbound(REQUEST)).toEqual({
      respond: { status: 403, headers: {}, body: '' },
      setHeaders: {},
      removeHeaders: [],
    });
    expect(inbound({ type: 'deny', config: { status_code: 451 } }).inbound(REQUEST).respond?.status).toBe(
      451,
    );
  });

  it('custom-response: status, body and headers (names lower-cased)', () => {
    const result = inbound({
      type: 'custom-response',
      config: { status_code: 418, body: 'short and stout', headers: { 'Content-Type': 'text/plain' } },
    }).inbound(REQUEST);
    expect(result.respond).toEqual({
      status: 418,
      headers: { 'content-type': 'text/plain' },
      body: 'short and stout',
    });
  });

  it('add-headers and remove-headers: for the request sent upstream; the later action wins', () => {
    const result = inbound(
      { type: 'add-headers', config: { headers: { 'X-Edge': 'yes', 'X-Drop': 'soon' } } },
      { type: 'remove-headers', config: { headers: ['Cookie', 'x-drop'] } },
    ).inbound(REQUEST);
    expect(result).toEqual({ setHeaders: { 'x-edge': 'yes' }, removeHeaders: ['cookie', 'x-drop'] });
    const readded = inbound(
      { type: 'remove-headers', config: { headers: ['x-a'] } },
      { type: 'add-headers', config: { headers: { 'x-a': 'new' } } },
    ).inbound(REQUEST);
    // The edge removes first, then sets: x-a ends up with the new value only.
    expect(readded).toEqual({ setHeaders: { 'x-a': 'new' }, removeHeaders: ['x-a'] });
  });

  it('redirect: to as written, 302 by default', () => {
    expect(
      inbound({ type: 'redirect', config: { to: 'https://elsewhere.example/' } }).inbound(REQUEST).respond,
    ).toEqual({
      status: 302,
      headers: { location: 'https://elsewhere.example/' },
      body: '',
    });
  });

  it('redirect: from replaced by to with captures; a URL it does not match goes on', () => {
    const policy = inbound(
      { type: 'redirect', config: { from: '^http://([^/]+)(.*)$', to: 'https://$1$2', status_code: 301 } },
      { type: 'add-headers', config: { headers: { 'x-secure': 'yes' } } },
    );
    expect(policy.inbound(REQUEST).respond).toEqual({
      status: 301,
      headers: { location: 'https://app.example.com/old/items?page=2' },
      body: '',
    });
    const secure = policy.inbound({ ...REQUEST, url: 'https://app.example.com/old/items?page=2' });
    expect(secure).toEqual({ setHeaders: { 'x-secure': 'yes' }, removeHeaders: [] });
  });

  it('url-rewrite: the request target rewritten; later rules see the new path', () => {
    const policy = http({
      inbound: [
        { name: 'rewrite', actions: [{ type: 'url-rewrite', config: { from: '^/old/', to: '/new/' } }] },
        {
          name: 'sees-it',
          expressions: [
            "req.path == '/new/items'",
            "req.query == 'page=2'",
            "req.url == 'http://app.example.com/new/items?page=2'",
          ],
          actions: [{ type: 'add-headers', config: { headers: { 'x-seen': 'new' } } }],
        },
      ],
    });
    expect(policy.inbound(REQUEST)).toEqual({
      setHeaders: { 'x-seen': 'new' },
      removeHeaders: [],
      rewrittenPath: '/new/items?page=2',
    });
    const untouched = policy.inbound({
      ...REQUEST,
      path: '/other',
      url: 'http://app.example.com/other?page=2',
    });
    expect(untouched.rewrittenPath).toBeUndefined();
  });

  it('url-rewrite: may change the query too', () => {
    const policy = inbound({
      type: 'url-rewrite',
      config: { from: '^/old/(\\w+)\\?page=(\\d+)$', to: '/v2/$1/page/$2?from=old' },
    });
    expect(policy.inbound(REQUEST).rewrittenPath).toBe('/v2/items/page/2?from=old');
  });

  it('log: metadata and the request go to onLog; evaluation goes on', () => {
    const logs: PolicyLogEntry[] = [];
    const policy = http(
      {
        inbound: [
          {
            name: 'audit',
            actions: [{ type: 'log', config: { metadata: { team: 'edge', level: 2 } } }, { type: 'deny' }],
          },
        ],
      },
      logs,
    );
    expect(policy.inbound(REQUEST).respond?.status).toBe(403);
    expect(logs).toEqual([
      {
        rule: 'audit',
        path: ['inbound', 0, 'actions', 0],
        metadata: { team: 'edge', level: 2 },
        request: { method: 'GET', url: REQUEST.url, clientIp: '192.0.2.10' },
      },
    ]);
  });

  it('a terminal action stops its rule and every later rule', () => {
    const policy = http({
      inbound: [
        { name: 'skip', expressions: ["req.method == 'POST'"], actions: [{ type: 'deny' }] },
        {
          name: 'first',
          actions: [
            { type: 'add-headers', config: { headers: { 'x-a': '1' } } },
            { type: 'custom-response', config: { status_code: 200, body: 'first' } },
            { type: 'add-headers', config: { headers: { 'x-b': '1' } } },
          ],
        },
        { name: 'never', actions: [{ type: 'deny' }] },
      ],
    });
    expect(policy.inbound(REQUEST)).toEqual({
      respond: { status: 200, headers: {}, body: 'first' },
      setHeaders: { 'x-a': '1' },
      removeHeaders: [],
    });
  });
});

describe('outbound actions', () => {
  it('add-headers and remove-headers act on the response', () => {
    const result = outbound(
      { type: 'add-headers', config: { headers: { 'Strict-Transport-Security': 'max-age=63072000' } } },
      { type: 'remove-headers', config: { headers: ['Server'] } },
    ).outbound(REQUEST, RESPONSE);
    expect(result).toEqual({
      setHeaders: { 'strict-transport-security': 'max-age=63072000' },
      removeHeaders: ['server'],
    });
  });

  it('custom-response and deny replace the response', () => {
    const policy = http({
      outbound: [
        {
          name: 'mask-errors',
          expressions: ['res.status_code >= 500'],
          actions: [{ type: 'custom-response', config: { status_code: 503, body: 'try later' } }],
        },
        { name: 'hide-admin', expressions: ["req.path.startsWith('/admin')"], actions: [{ type: 'deny' }] },
      ],
    });
    expect(policy.outbound(REQUEST, { status: 502, headers: {} }).respond).toEqual({
      status: 503,
      headers: {},
      body: 'try later',
    });
    expect(policy.outbound({ ...REQUEST, path: '/admin/x' }, RESPONSE).respond?.status).toBe(403);
    expect(policy.outbound(REQUEST, RESPONSE)).toEqual({ setHeaders: {}, removeHeaders: [] });
  });

  it('does not run inbound rules, nor inbound the outbound ones', () => {
    const policy = http({
      inbound: [{ name: 'in', actions: [{ type: 'add-headers', config: { headers: { 'x-in': '1' } } }] }],
      outbound: [{ name: 'out', actions: [{ type: 'add-headers', config: { headers: { 'x-out': '1' } } }] }],
    });
    expect(policy.inbound(REQUEST).setHeaders).toEqual({ 'x-in': '1' });
    expect(policy.outbound(REQUEST, RESPONSE).setHeaders).toEqual({ 'x-out': '1' });
  });
});

describe('connection deny', () => {
  it('refuses the connection at the first matching deny', () => {
    const policy = compilePolicy(
      {
        inbound: [
          { name: 'office', expressions: ["conn.client_ip.startsWith('10.')"], actions: [{ type: 'deny' }] },
          { name: 'low-ports', expressions: ['conn.client_port < 1024'], actions: [{ type: 'deny' }] },
        ],
      },
      { phase: 'connection' },
    );
    expect(policy.connection({ clientIp: '10.1.2.3', clientPort: 5000 })).toEqual({
      allowed: false,
      deniedBy: 'office',
    });
    expect(policy.connection({ clientIp: '192.0.2.1', clientPort: 80 })).toEqual({
      allowed: false,
      deniedBy: 'low-ports',
    });
    expect(policy.connection({ clientIp: '192.0.2.1', clientPort: 5000 })).toEqual({ allowed: true });
  });

  it('is not callable as an HTTP policy, nor the other way round', () => {
    const connection = compilePolicy({ inbound: [] }, { phase: 'connection' });
    expect(() => connection.inbound(REQUEST)).toThrow(/needs a policy compiled for the 'http' phase/);
    const httpPolicy = http({ inbound: [] });
    expect(() => httpPolicy.connection({ clientIp: '192.0.2.1', clientPort: 1 })).toThrow(
      /'connection' phase/,
    );
  });
});
