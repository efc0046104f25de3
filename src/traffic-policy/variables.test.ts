import { describe, expect, it } from 'vitest';
import { compilePolicy } from './compile.js';
import type { PolicyRequest } from './types.js';

const REQUEST: PolicyRequest = {
  method: 'POST',
  url: 'https://app.example.com/api/items?tag=a&tag=b&q=x%20y',
  path: '/api/items',
  query: 'tag=a&tag=b&q=x%20y',
  host: 'app.example.com',
  headers: { 'User-Agent': 'curl/8.5', 'X-Multi': ['one', 'two'], 'x-multi': 'three', Absent: undefined },
  clientIp: '192.0.2.10',
  clientPort: 51515,
  tlsVersion: '1.3',
};

/** Whether `expression` holds for the request (and response, when given). */
function holds(expression: string, response?: { status: number; headers: Record<string, string> }): boolean {
  const rules = [{ name: 'probe', expressions: [expression], actions: [{ type: 'deny' }] }];
  const errors: Error[] = [];
  const policy = compilePolicy(response ? { outbound: rules } : { inbound: rules }, {
    phase: 'http',
    onError: (error) => errors.push(error),
  });
  const result = response ? policy.outbound(REQUEST, response) : policy.inbound(REQUEST);
  expect(errors).toEqual([]);
  return result.respond?.status === 403;
}

describe('variables of inbound HTTP rules', () => {
  it.each([
    "req.method == 'POST'",
    "req.url == 'https://app.example.com/api/items?tag=a&tag=b&q=x%20y'",
    "req.path == '/api/items'",
    "req.query == 'tag=a&tag=b&q=x%20y'",
    "req.query_params['tag'] == ['a', 'b']",
    "req.query_params['q'] == ['x y']",
    "!('missing' in req.query_params)",
    "req.host == 'app.example.com'",
    "req.headers['x-multi'] == ['one', 'two', 'three']",
    "req.headers['user-agent'] == ['curl/8.5']",
    "!('absent' in req.headers) && !('User-Agent' in req.headers)",
    "req.user_agent.startsWith('curl/')",
    "conn.client_ip == '192.0.2.10'",
    'conn.client_port == 51515',
    "conn.tls.version == '1.3'",
    "req.headers[?'x-none'].orValue([]).size() == 0",
    "req.path.matches('^/api/')",
  ])('%s', (expression) => {
    expect(holds(expression)).toBe(true);
  });

  it.each(["req.method == 'GET'", "req.query_params['tag'] == ['a']", 'conn.client_port == 1'])(
    'does not match when false: %s',
    (expression) => {
      expect(holds(expression)).toBe(false);
    },
  );

  it('reads an empty user agent and TLS version when there are none', () => {
    const policy = compilePolicy(
      {
        inbound: [
          {
            name: 'r',
            expressions: ["req.user_agent == ''", "conn.tls.version == ''"],
            actions: [{ type: 'deny' }],
          },
        ],
      },
      { phase: 'http' },
    );
    const result = policy.inbound({ ...REQUEST, headers: {}, tlsVersion: undefined });
    expect(result.respond?.status).toBe(403);
  });
});

describe('variables of outbound HTTP rules', () => {
  const response = { status: 503, headers: { Server: 'upstream/1.0', 'Content-Type': 'text/plain' } };
  it.each([
    'res.status_code == 503',
    "res.headers['server'] == ['upstream/1.0']",
    "'content-type' in res.headers",
    "req.path == '/api/items' && conn.client_ip == '192.0.2.10'",
  ])('%s', (expression) => {
    expect(holds(expression, response)).toBe(true);
  });
});

describe('variables of TCP and TLS edge rules', () => {
  it('sees conn.client_ip, conn.client_port and conn.tls.version', () => {
    const policy = compilePolicy(
      {
        inbound: [
          {
            name: 'r',
            expressions: [
              "conn.client_ip == '198.51.100.7'",
              'conn.client_port > 1024',
              "conn.tls.version == '1.2'",
            ],
            actions: [{ type: 'deny' }],
          },
        ],
      },
      { phase: 'connection' },
    );
    expect(policy.connection({ clientIp: '198.51.100.7', clientPort: 40000, tlsVersion: '1.2' })).toEqual({
      allowed: false,
      deniedBy: 'r',
    });
    expect(policy.connection({ clientIp: '198.51.100.7', clientPort: 40000 })).toEqual({ allowed: true });
  });
});
