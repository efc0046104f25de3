import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The policy module is compiled when it is written (src/traffic-policy): CEL that does not parse
 * or type-check, unknown actions and bad action configs are 400s naming the field, and TCP/TLS
 * edges (which act on connections) accept only conn.* and deny.
 */

type Json = Record<string, unknown>;

let t: TestServer;
let matchCounter = 0;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

async function newEdge(): Promise<string> {
  return (await t.api('POST', '/edges/https', {})).body.id as string;
}

/** A fresh HTTPS route; returns its path. */
async function newRoute(edgeId?: string): Promise<string> {
  const edge = edgeId ?? (await newEdge());
  const route = await t.api('POST', `/edges/https/${edge}/routes`, {
    match_type: 'path_prefix',
    match: `/p${++matchCounter}`,
  });
  expect(route.status, JSON.stringify(route.body)).toBe(201);
  return `/edges/https/${edge}/routes/${route.body.id as string}`;
}

const rule = (fields: Json): Json => ({ name: 'r', expressions: [], actions: [{ type: 'deny' }], ...fields });

/** PUT `policy` as the module of `path` and expect a 400 whose message is exactly `message`. */
async function expectRefused(path: string, policy: Json, message: string | RegExp): Promise<void> {
  const response = await t.api('PUT', `${path}/policy`, policy);
  expect(response.status, `${JSON.stringify(policy)}: ${JSON.stringify(response.body)}`).toBe(400);
  expect(response.body.error_code).toBe('ERR_EDGEWARD_100');
  if (typeof message === 'string') expect(response.body.msg, JSON.stringify(policy)).toBe(message);
  else expect(response.body.msg, JSON.stringify(policy)).toMatch(message);
}

const VALID_HTTP_POLICY = {
  inbound: [
    {
      name: 'block-bots',
      expressions: ["req.user_agent.contains('bot')", "!conn.client_ip.startsWith('10.')"],
      actions: [{ type: 'custom-response', config: { status_code: 403, body: 'no bots' } }],
    },
    {
      name: 'limit',
      expressions: [],
      actions: [
        {
          type: 'rate-limit',
          config: {
            name: 'per-ip',
            algorithm: 'sliding_window',
            capacity: 100,
            rate: '60s',
            bucket_key: ['conn.client_ip'],
          },
        },
      ],
    },
    {
      name: 'old-api',
      expressions: ["req.path.startsWith('/v1/')", "req.method in ['GET', 'HEAD']"],
      actions: [
        { type: 'url-rewrite', config: { from: '^/v1/(.*)$', to: '/v2/$1' } },
        { type: 'add-headers', config: { headers: { 'X-Rewritten': 'v1' } } },
        { type: 'log', config: { metadata: { reason: 'v1' } } },
      ],
    },
  ],
  outbound: [
    {
      name: 'hide-server',
      expressions: ['res.status_code >= 500'],
      actions: [{ type: 'remove-headers', config: { headers: ['server'] } }, { type: 'deny' }],
    },
  ],
};

describe('policy module: valid policies', () => {
  it('stores a valid HTTPS route policy and reads it back as written', async () => {
    const path = await newRoute();
    const put = await t.api('PUT', `${path}/policy`, VALID_HTTP_POLICY);
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const expected = {
      enabled: true,
      inbound: VALID_HTTP_POLICY.inbound,
      outbound: [
        {
          name: 'hide-server',
          expressions: ['res.status_code >= 500'],
          actions: [
            { type: 'remove-headers', config: { headers: ['server'] } },
            { type: 'deny', config: null },
          ],
        },
      ],
    };
    expect(put.body).toEqual(expected);
    expect((await t.api('GET', `${path}/policy`)).body).toEqual(expected);
    expect((await t.api('GET', path)).body.policy).toEqual(expected);
  });

  it('accepts a valid policy in a route create body', async () => {
    const edgeId = await newEdge();
    const created = await t.api('POST', `/edges/https/${edgeId}/routes`, {
      match_type: 'exact_path',
      match: '/created',
      policy: VALID_HTTP_POLICY,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((created.body.policy as Json).inbound).toEqual(VALID_HTTP_POLICY.inbound);
  });

  it('stores conn.* rules with deny on TCP and TLS edges', async () => {
    const policy = {
      inbound: [
        {
          name: 'block-probe',
          expressions: ["conn.client_ip == '192.0.2.1' || conn.client_port < 1024"],
          actions: [{ type: 'deny' }],
        },
      ],
    };
    for (const kind of ['tcp', 'tls']) {
      const created = await t.api('POST', `/edges/${kind}`, { policy });
      expect(created.status, `${kind}: ${JSON.stringify(created.body)}`).toBe(201);
      expect(created.body.policy).toEqual({
        enabled: true,
        inbound: [{ ...policy.inbound[0], actions: [{ type: 'deny', config: null }] }],
        outbound: null,
      });
      const put = await t.api('PUT', `/edges/${kind}/${created.body.id as string}/policy`, {
        ...policy,
        outbound: [],
      });
      expect(put.status, `${kind}: ${JSON.stringify(put.body)}`).toBe(200);
    }
  });
});

describe('policy module: refused policies name the field', () => {
  it('refuses CEL that does not parse or type-check', async () => {
    const path = await newRoute();
    await expectRefused(
      path,
      { inbound: [rule({ expressions: ['true', "req.path == '/a' &&"] })] },
      'inbound[0].expressions[1]: invalid CEL: Unexpected token: EOF at column 20',
    );
    await expectRefused(
      path,
      { inbound: [rule({ expressions: ["request.path == '/'"] })] },
      /^inbound\[0\]\.expressions\[0\]: invalid CEL: Unknown variable: request at column 1; an inbound HTTP rule can use req\.method, /,
    );
    await expectRefused(
      path,
      { inbound: [rule({ expressions: ['req.pathh == "/"'] })] },
      /^inbound\[0\]\.expressions\[0\]: invalid CEL: No such key: pathh/,
    );
    await expectRefused(
      path,
      { inbound: [rule({ expressions: ['req.method == 1'] })] },
      /^inbound\[0\]\.expressions\[0\]: invalid CEL: no such overload: string == int/,
    );
    await expectRefused(
      path,
      { inbound: [rule({ expressions: ['req.path'] })] },
      'inbound[0].expressions[0]: must evaluate to a bool, got string',
    );
    // The response exists only for outbound rules.
    await expectRefused(
      path,
      { inbound: [rule({ expressions: ['res.status_code == 200'] })] },
      /^inbound\[0\]\.expressions\[0\]: invalid CEL: Unknown variable: res/,
    );
  });

  it('refuses unknown and misplaced actions, listing the supported ones', async () => {
    const path = await newRoute();
    await expectRefused(
      path,
      { inbound: [rule({ actions: [{ type: 'deny' }, { type: 'teleport' }] })] },
      "inbound[0].actions[1].type: unsupported action type 'teleport' on inbound rules; supported: deny, custom-response, redirect, rate-limit, add-headers, remove-headers, url-rewrite, log",
    );
    await expectRefused(
      path,
      {
        inbound: [],
        outbound: [rule({ actions: [{ type: 'redirect', config: { to: 'https://x.example' } }] })],
      },
      "outbound[0].actions[0].type: 'redirect' is not supported on outbound rules; supported: deny, custom-response, add-headers, remove-headers",
    );
  });

  it('refuses bad action configs', async () => {
    const path = await newRoute();
    const cases: Array<[Json, string | RegExp]> = [
      [
        { type: 'deny', config: { status_code: 200 } },
        'config.status_code: must be an HTTP status code from 400 to 599',
      ],
      [{ type: 'deny', config: { status: 403 } }, 'config.status: unknown field'],
      [{ type: 'custom-response', config: { body: 'x' } }, 'config.status_code: is required'],
      [{ type: 'custom-response' }, 'config.status_code: is required'],
      [
        { type: 'custom-response', config: { status_code: '200' } },
        'config.status_code: must be a number, got string',
      ],
      [
        { type: 'add-headers', config: { headers: { 'Bad Name': 'x' } } },
        'config.headers: "Bad Name" is not an HTTP header name (RFC 9110 token characters only)',
      ],
      [{ type: 'remove-headers', config: { headers: [] } }, 'config.headers: must list at least one header'],
      [
        { type: 'redirect', config: { from: '^http://(.*)$', to: 'https://$2' } },
        "config.to: refers to $2, but 'from' has 1 capture group",
      ],
      [
        { type: 'url-rewrite', config: { from: '(', to: '/' } },
        /^config\.from: is not a valid regular expression: /,
      ],
      [
        {
          type: 'rate-limit',
          config: {
            name: 'a',
            algorithm: 'sliding_window',
            capacity: 10,
            rate: '1 minute',
            bucket_key: ['conn.client_ip'],
          },
        },
        "config.rate: must be a duration such as '500ms', '60s', '5m' or '1h' (at most 24h)",
      ],
      [
        {
          type: 'rate-limit',
          config: {
            name: 'a',
            algorithm: 'sliding_window',
            capacity: 10,
            rate: '60s',
            bucket_key: ['conn.ip'],
          },
        },
        /^config\.bucket_key\[0\]: invalid CEL: No such key: ip/,
      ],
    ];
    // The messages above are relative to the action, which is `inbound[0].actions[0]`.
    for (const [action, message] of cases) {
      const expected =
        typeof message === 'string'
          ? `inbound[0].actions[0].${message}`
          : new RegExp(`^inbound\\[0\\]\\.actions\\[0\\]\\.${message.source.slice(1)}`);
      await expectRefused(path, { inbound: [rule({ actions: [action] })] }, expected);
    }
  });

  it('names the module in create and update bodies', async () => {
    const edgeId = await newEdge();
    const created = await t.api('POST', `/edges/https/${edgeId}/routes`, {
      match_type: 'exact_path',
      match: '/bad',
      policy: { inbound: [rule({ expressions: ['req.path =='] })] },
    });
    expect(created.status).toBe(400);
    expect(created.body.msg).toBe(
      'policy.inbound[0].expressions[0]: invalid CEL: Unexpected token: EOF at column 12',
    );
    const tcp = (await t.api('POST', '/edges/tcp', {})).body.id as string;
    const patched = await t.api('PATCH', `/edges/tcp/${tcp}`, {
      policy: { inbound: [rule({ actions: [{ type: 'log' }] })] },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.msg).toBe(
      "policy.inbound[0].actions[0].type: 'log' is not supported on a TCP or TLS edge's rules, which act on connections; supported: deny",
    );
  });

  it('refuses req.* and HTTP actions on TCP and TLS edges, which act on connections', async () => {
    for (const kind of ['tcp', 'tls']) {
      const created = await t.api('POST', `/edges/${kind}`, {
        policy: { inbound: [rule({ expressions: ["req.path == '/admin'"] })] },
      });
      expect(created.status, kind).toBe(400);
      expect(created.body.msg).toBe(
        "policy.inbound[0].expressions[0]: invalid CEL: Unknown variable: req at column 1; a TCP or TLS edge's rule (it acts on connections) can use conn.client_ip, conn.client_port, conn.tls.version",
      );
      const path = `/edges/${kind}/${(await t.api('POST', `/edges/${kind}`, {})).body.id as string}`;
      await expectRefused(
        path,
        { inbound: [rule({ expressions: ["req.path == '/admin'"] })] },
        /^inbound\[0\]\.expressions\[0\]: invalid CEL: Unknown variable: req/,
      );
      await expectRefused(
        path,
        { inbound: [rule({ actions: [{ type: 'deny', config: { status_code: 403 } }] })] },
        'inbound[0].actions[0].config.status_code: unknown field',
      );
      await expectRefused(
        path,
        { inbound: [], outbound: [rule({})] },
        'outbound: must be empty or null: a TCP or TLS edge has no HTTP response for outbound rules to act on',
      );
    }
  });

  it('refuses log metadata nested past the body depth limit (64) at any depth, naming it, on every kind of edge', async () => {
    // As text: JSON.stringify itself runs out of stack on the deepest of these.
    const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
    const policyText = (levels: number) =>
      `{"inbound":[{"name":"r","expressions":[],"actions":[{"type":"log","config":{"metadata":${nested(levels)}}}]}]}`;
    const route = await newRoute();
    // The metadata object is the body's 7th level: 58 nested objects from there fill the 64 allowed.
    const deepest = await t.api('PUT', `${route}/policy`, undefined, { rawBody: policyText(58) });
    expect(deepest.status, deepest.text).toBe(200);
    expect((await t.api('GET', `${route}/policy`)).text).toContain(`"metadata":${nested(58)}`);
    const tooDeep =
      /^inbound\[0\]\.actions\[0\]\.config\.metadata(\.a)+: nests deeper than 64 levels of arrays and objects/;
    // 3,800 levels made a recursive walk over the body run out of stack (a 500); 100,000 still parse.
    for (const levels of [59, 3_800, 100_000]) {
      const response = await t.api('PUT', `${route}/policy`, undefined, { rawBody: policyText(levels) });
      expect(response.status, `${levels} levels: ${response.text.slice(0, 300)}`).toBe(400);
      expect(response.body.error_code).toBe('ERR_EDGEWARD_100');
      expect(response.body.msg).toMatch(tooDeep);
    }
    for (const kind of ['tcp', 'tls']) {
      const edge = (await t.api('POST', `/edges/${kind}`, {})).body.id as string;
      const put = await t.api('PUT', `/edges/${kind}/${edge}/policy`, undefined, {
        rawBody: policyText(3_800),
      });
      expect(put.status, `${kind}: ${put.text.slice(0, 300)}`).toBe(400);
      expect(put.body.msg).toMatch(tooDeep);
      const created = await t.api('POST', `/edges/${kind}`, undefined, {
        rawBody: `{"policy":${policyText(100_000)}}`,
      });
      expect(created.status, `${kind}: ${created.text.slice(0, 300)}`).toBe(400);
      expect(created.body.msg).toMatch(
        /^policy\.inbound\[0\]\.actions\[0\]\.config\.metadata(\.a)+: nests deeper/,
      );
    }
  });

  it('leaves the stored policy unchanged when a replacement is refused', async () => {
    const path = await newRoute();
    const good = { inbound: [rule({ expressions: ["req.method == 'POST'"] })] };
    expect((await t.api('PUT', `${path}/policy`, good)).status).toBe(200);
    await expectRefused(
      path,
      { inbound: [rule({ expressions: ['1 +'] })] },
      /^inbound\[0\]\.expressions\[0\]: /,
    );
    const read = await t.api('GET', `${path}/policy`);
    expect((read.body.inbound as Json[])[0]?.expressions).toEqual(["req.method == 'POST'"]);
  });
});
