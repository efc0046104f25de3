import { describe, expect, it } from 'vitest';
import { compilePolicy } from './compile.js';
import { PolicyError, type PolicyPath } from './errors.js';
import type { PolicyDocument, PolicyPhase } from './types.js';

type Rule = {
  name: string;
  expressions?: string[];
  actions: { type: string; config?: Record<string, unknown> | null }[];
};

const rule = (fields: Partial<Rule>): Rule => ({ name: 'r', actions: [{ type: 'deny' }], ...fields });
const action = (type: string, config?: Record<string, unknown>): Rule =>
  rule({ actions: [{ type, config }] });

/** The PolicyError compiling `module` throws. */
function refusal(module: PolicyDocument, phase: PolicyPhase = 'http'): PolicyError {
  try {
    compilePolicy(module, { phase });
  } catch (error) {
    if (error instanceof PolicyError) return error;
    throw error;
  }
  throw new Error(`compiled: ${JSON.stringify(module)}`);
}

function expectRefusal(
  module: PolicyDocument,
  path: PolicyPath,
  reason: string | RegExp,
  phase?: PolicyPhase,
) {
  const error = refusal(module, phase);
  expect(error.path).toEqual(path);
  if (typeof reason === 'string') expect(error.reason).toBe(reason);
  else expect(error.reason).toMatch(reason);
}

const RULE_0 = ['inbound', 0] as const;
const CONFIG = [...RULE_0, 'actions', 0, 'config'] as const;

describe('compilePolicy: expressions', () => {
  it('refuses a syntax error, naming the expression and the column', () => {
    const error = refusal({ inbound: [rule({}), rule({ expressions: ['true', "req.path == '/a' &&"] })] });
    expect(error.path).toEqual(['inbound', 1, 'expressions', 1]);
    expect(error.reason).toBe('invalid CEL: Unexpected token: EOF at column 20');
    expect(error.message).toBe('inbound[1].expressions[1]: invalid CEL: Unexpected token: EOF at column 20');
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('refuses unknown variables and fields, listing the ones there are', () => {
    expectRefusal(
      { inbound: [rule({ expressions: ["request.path == '/'"] })] },
      [...RULE_0, 'expressions', 0],
      'invalid CEL: Unknown variable: request at column 1; an inbound HTTP rule can use req.method, req.url, req.path, req.query, req.query_params, req.host, req.headers, req.user_agent, conn.client_ip, conn.client_port, conn.tls.version',
    );
    expectRefusal(
      { inbound: [rule({ expressions: ["conn.tls.cipher == 'x'"] })] },
      [...RULE_0, 'expressions', 0],
      /^invalid CEL: No such key: cipher at column \d+; /,
    );
    // The response is there for outbound rules only.
    expectRefusal(
      { inbound: [rule({ expressions: ['res.status_code == 200'] })] },
      [...RULE_0, 'expressions', 0],
      /^invalid CEL: Unknown variable: res /,
    );
    expect(() =>
      compilePolicy({ outbound: [rule({ expressions: ['res.status_code == 200'] })] }, { phase: 'http' }),
    ).not.toThrow();
  });

  it('refuses type errors and expressions that are not bools', () => {
    expectRefusal(
      { inbound: [rule({ expressions: ['conn.client_port == "80"'] })] },
      [...RULE_0, 'expressions', 0],
      /^invalid CEL: no such overload: int == string/,
    );
    expectRefusal(
      { inbound: [rule({ expressions: ['req.headers'] })] },
      [...RULE_0, 'expressions', 0],
      'must evaluate to a bool, got map<string, list<string>>',
    );
  });

  it('refuses a literal regular expression given to matches() that does not compile', () => {
    expectRefusal(
      { inbound: [rule({ expressions: ["req.path.startsWith('/') && req.path.matches('(')"] })] },
      [...RULE_0, 'expressions', 0],
      /^invalid CEL: matches\(\) is given Invalid regular expression/,
    );
  });

  it('accepts an empty expression list: the rule always applies', () => {
    const policy = compilePolicy({ inbound: [rule({ expressions: [] })] }, { phase: 'http' });
    expect(policy.phase).toBe('http');
    expect(policy.enabled).toBe(true);
  });
});

describe('compilePolicy: actions', () => {
  it('refuses an unknown action type, listing the supported ones', () => {
    expectRefusal(
      { inbound: [rule({ actions: [{ type: 'deny' }, { type: 'teleport' }] })] },
      [...RULE_0, 'actions', 1, 'type'],
      "unsupported action type 'teleport' on inbound rules; supported: deny, custom-response, redirect, rate-limit, add-headers, remove-headers, url-rewrite, log",
    );
    expectRefusal(
      { outbound: [action('url-rewrite', { from: 'a', to: '/b' })] },
      ['outbound', 0, 'actions', 0, 'type'],
      "'url-rewrite' is not supported on outbound rules; supported: deny, custom-response, add-headers, remove-headers",
    );
    // Not an own property of the table, whatever the name.
    expectRefusal(
      { inbound: [action('constructor')] },
      [...RULE_0, 'actions', 0, 'type'],
      /^unsupported action type 'constructor'/,
    );
  });

  const cases: Array<[string, Rule, PolicyPath, string | RegExp]> = [
    [
      'deny: status out of range',
      action('deny', { status_code: 302 }),
      [...CONFIG, 'status_code'],
      'must be an HTTP status code from 400 to 599',
    ],
    ['deny: unknown field', action('deny', { code: 403 }), [...CONFIG, 'code'], 'unknown field'],
    [
      'custom-response: status required',
      action('custom-response', { body: 'x' }),
      [...CONFIG, 'status_code'],
      'is required',
    ],
    ['custom-response: null config', action('custom-response'), [...CONFIG, 'status_code'], 'is required'],
    [
      'custom-response: status type',
      action('custom-response', { status_code: '200' }),
      [...CONFIG, 'status_code'],
      'must be a number, got string',
    ],
    [
      'custom-response: whole status',
      action('custom-response', { status_code: 200.5 }),
      [...CONFIG, 'status_code'],
      'must be a whole number',
    ],
    [
      'custom-response: body type',
      action('custom-response', { status_code: 200, body: 7 }),
      [...CONFIG, 'body'],
      'must be a string, got number',
    ],
    [
      'custom-response: framing header',
      action('custom-response', { status_code: 200, headers: { 'Content-Length': '1' } }),
      [...CONFIG, 'headers', 'Content-Length'],
      'is set by the edge and cannot be given',
    ],
    ['add-headers: headers required', action('add-headers', {}), [...CONFIG, 'headers'], 'is required'],
    [
      'add-headers: empty',
      action('add-headers', { headers: {} }),
      [...CONFIG, 'headers'],
      'must name at least one header',
    ],
    [
      'add-headers: bad name',
      action('add-headers', { headers: { 'a b': 'x' } }),
      [...CONFIG, 'headers'],
      '"a b" is not an HTTP header name (RFC 9110 token characters only)',
    ],
    [
      'add-headers: CR in value',
      action('add-headers', { headers: { 'x-a': 'a\r\nb: c' } }),
      [...CONFIG, 'headers', 'x-a'],
      'must not contain CR, LF or NUL',
    ],
    [
      'add-headers: same name twice',
      action('add-headers', { headers: { 'X-A': '1', 'x-a': '2' } }),
      [...CONFIG, 'headers'],
      '"X-A" and "x-a" name the same header (names are case-insensitive)',
    ],
    [
      'remove-headers: list',
      action('remove-headers', { headers: 'server' }),
      [...CONFIG, 'headers'],
      'must be an array, got string',
    ],
    [
      'remove-headers: bad name',
      action('remove-headers', { headers: ['ok', 'no:'] }),
      [...CONFIG, 'headers', 1],
      'must be an HTTP header name (RFC 9110 token characters only)',
    ],
    ['redirect: to required', action('redirect', {}), [...CONFIG, 'to'], 'is required'],
    [
      'redirect: status',
      action('redirect', { to: '/x', status_code: 200 }),
      [...CONFIG, 'status_code'],
      'must be one of 301, 302, 303, 307, 308',
    ],
    [
      'redirect: bad from',
      action('redirect', { to: '/x', from: '(' }),
      [...CONFIG, 'from'],
      /^is not a valid regular expression: /,
    ],
    [
      'redirect: missing group',
      action('redirect', { to: 'https://$2', from: '^http://(.*)$' }),
      [...CONFIG, 'to'],
      "refers to $2, but 'from' has 1 capture group",
    ],
    [
      'redirect: capture without from',
      action('redirect', { to: 'https://$1' }),
      [...CONFIG, 'to'],
      "refers to $1, but there is no 'from' pattern to capture it",
    ],
    [
      'redirect: unknown named group',
      action('redirect', { to: '/$<id>', from: '^/(?<key>.*)' }),
      [...CONFIG, 'to'],
      "refers to $<id>, but 'from' has no group named 'id'",
    ],
    ['url-rewrite: from required', action('url-rewrite', { to: '/' }), [...CONFIG, 'from'], 'is required'],
    [
      'url-rewrite: $0',
      action('url-rewrite', { from: '^/a', to: '/b$0' }),
      [...CONFIG, 'to'],
      'refers to $0, which is no capture group; use $& for the whole match',
    ],
    [
      'rate-limit: algorithm',
      action('rate-limit', {
        name: 'a',
        algorithm: 'fixed',
        capacity: 1,
        rate: '1s',
        bucket_key: ['conn.client_ip'],
      }),
      [...CONFIG, 'algorithm'],
      "must be 'sliding_window', the only algorithm",
    ],
    [
      'rate-limit: capacity',
      action('rate-limit', {
        name: 'a',
        algorithm: 'sliding_window',
        capacity: 0,
        rate: '1s',
        bucket_key: ['conn.client_ip'],
      }),
      [...CONFIG, 'capacity'],
      'must be at least 1',
    ],
    [
      'rate-limit: rate',
      action('rate-limit', {
        name: 'a',
        algorithm: 'sliding_window',
        capacity: 1,
        rate: '2d',
        bucket_key: ['conn.client_ip'],
      }),
      [...CONFIG, 'rate'],
      "must be a duration such as '500ms', '60s', '5m' or '1h' (at most 24h)",
    ],
    [
      'rate-limit: bucket_key empty',
      action('rate-limit', {
        name: 'a',
        algorithm: 'sliding_window',
        capacity: 1,
        rate: '1s',
        bucket_key: [],
      }),
      [...CONFIG, 'bucket_key'],
      'must list at least one expression',
    ],
    [
      'rate-limit: bucket_key CEL',
      action('rate-limit', {
        name: 'a',
        algorithm: 'sliding_window',
        capacity: 1,
        rate: '1s',
        bucket_key: ['conn.client_ip', 'req.headers['],
      }),
      [...CONFIG, 'bucket_key', 1],
      /^invalid CEL: /,
    ],
    [
      'log: metadata type',
      action('log', { metadata: 'x' }),
      [...CONFIG, 'metadata'],
      /^must be (an object|a record), got string$/,
    ],
    ['log: unknown field', action('log', { level: 'info' }), [...CONFIG, 'level'], 'unknown field'],
  ];
  it.each(cases)('%s', (_name, bad, path, reason) => {
    expectRefusal({ inbound: [bad] }, path, reason);
  });

  it('refuses two rate limits of the same name', () => {
    const limit = {
      type: 'rate-limit',
      config: {
        name: 'ip',
        algorithm: 'sliding_window',
        capacity: 1,
        rate: '1s',
        bucket_key: ['conn.client_ip'],
      },
    };
    expectRefusal(
      { inbound: [rule({ actions: [limit] }), rule({ actions: [limit] })] },
      ['inbound', 1, 'actions', 0, 'config', 'name'],
      "'ip' is already the name of the rate limit at inbound[0].actions[0]; names must be unique in a policy",
    );
  });

  it('accepts every action with a valid config', () => {
    const policy = compilePolicy(
      {
        inbound: [
          rule({
            actions: [
              { type: 'add-headers', config: { headers: { 'x-a': '1' } } },
              { type: 'remove-headers', config: { headers: ['cookie'] } },
              { type: 'url-rewrite', config: { from: '^/old/(?<rest>.*)$', to: '/new/$<rest>' } },
              { type: 'log', config: null },
              {
                type: 'rate-limit',
                config: {
                  name: 'ip',
                  algorithm: 'sliding_window',
                  capacity: 5,
                  rate: '500ms',
                  bucket_key: ['conn.client_ip', 'req.host'],
                },
              },
              { type: 'redirect', config: { from: '^http://(.*)$', to: 'https://$1$$', status_code: 308 } },
              {
                type: 'custom-response',
                config: { status_code: 200, body: 'ok', headers: { 'Content-Type': 'text/plain' } },
              },
              { type: 'deny', config: { status_code: 451 } },
            ],
          }),
        ],
        outbound: [
          rule({
            actions: [
              { type: 'add-headers', config: { headers: { 'x-b': '2' } } },
              { type: 'remove-headers', config: { headers: ['server'] } },
              { type: 'custom-response', config: { status_code: 502 } },
              { type: 'deny' },
            ],
          }),
        ],
      },
      { phase: 'http' },
    );
    expect(policy.phase).toBe('http');
  });
});

describe('compilePolicy: the connection phase (TCP and TLS edges)', () => {
  it('refuses req.* and res.*', () => {
    expectRefusal(
      { inbound: [rule({ expressions: ["req.path == '/'"] })] },
      [...RULE_0, 'expressions', 0],
      "invalid CEL: Unknown variable: req at column 1; a TCP or TLS edge's rule (it acts on connections) can use conn.client_ip, conn.client_port, conn.tls.version",
      'connection',
    );
  });

  it('refuses every action but deny, and any deny config', () => {
    expectRefusal(
      { inbound: [action('custom-response', { status_code: 403 })] },
      [...RULE_0, 'actions', 0, 'type'],
      "'custom-response' is not supported on a TCP or TLS edge's rules, which act on connections; supported: deny",
      'connection',
    );
    expectRefusal(
      { inbound: [action('deny', { status_code: 403 })] },
      [...CONFIG, 'status_code'],
      'unknown field',
      'connection',
    );
  });

  it('refuses outbound rules, but takes an empty or null list', () => {
    expectRefusal(
      { inbound: [], outbound: [rule({})] },
      ['outbound'],
      'must be empty or null: a TCP or TLS edge has no HTTP response for outbound rules to act on',
      'connection',
    );
    expect(() => compilePolicy({ inbound: [rule({})], outbound: [] }, { phase: 'connection' })).not.toThrow();
    expect(() =>
      compilePolicy({ inbound: [rule({})], outbound: null }, { phase: 'connection' }),
    ).not.toThrow();
  });
});

describe('compilePolicy: the module shape', () => {
  it('refuses what the API schema refuses, naming the field', () => {
    expectRefusal(
      { inbound: [{ expressions: [], actions: [{ type: 'deny' }] }] } as unknown as PolicyDocument,
      [...RULE_0, 'name'],
      'is required',
    );
    expectRefusal({ inbound: [], extra: true } as unknown as PolicyDocument, ['extra'], 'unknown field');
  });

  it('compiles a disabled policy, which then does nothing', () => {
    const policy = compilePolicy({ enabled: false, inbound: [rule({})] }, { phase: 'http' });
    expect(policy.enabled).toBe(false);
    const request = {
      method: 'GET',
      url: 'https://a.example/',
      path: '/',
      query: '',
      host: 'a.example',
      headers: {},
      clientIp: '192.0.2.1',
      clientPort: 1,
    };
    expect(policy.inbound(request)).toEqual({ setHeaders: {}, removeHeaders: [] });
    expect(() =>
      compilePolicy({ enabled: false, inbound: [rule({ expressions: ['(('] })] }, { phase: 'http' }),
    ).toThrow(PolicyError);
  });
});
