import { execFileSync } from 'node:child_process';
import { createPrivateKey, randomUUID, webcrypto, X509Certificate } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SecretBox } from '../../src/crypto/secret-box.js';
import { loadSecretKey } from '../../src/crypto/secret-key-file.js';
import { insertEdgeReferences } from '../support/edge-references.js';
import { IDP_METADATA } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { storedData } from '../support/stored-data.js';

type Json = Record<string, unknown>;

let t: TestServer;
let backendId: string;
/** The real key generation, for the spy that watches it. */
const generateKey = webcrypto.subtle.generateKey.bind(webcrypto.subtle);
let policyId: string;
let matchCounter = 0;

beforeAll(async () => {
  t = await startTestServer();
  ({ backendId } = await insertEdgeReferences(t, '3'));
  policyId = (await t.api('POST', '/ip_policies', {})).body.id as string;
});
afterAll(async () => t.stop());

/** A fresh edge and route; returns the route's path. */
async function newRoute(): Promise<{ edgeId: string; routeId: string; path: string }> {
  const edgeId = (await t.api('POST', '/edges/https', {})).body.id as string;
  const route = await t.api('POST', `/edges/https/${edgeId}/routes`, {
    match_type: 'path_prefix',
    match: `/m${++matchCounter}`,
  });
  expect(route.status, JSON.stringify(route.body)).toBe(201);
  const routeId = route.body.id as string;
  return { edgeId, routeId, path: `/edges/https/${edgeId}/routes/${routeId}` };
}

const SESSION_DEFAULTS = {
  options_passthrough: false,
  cookie_prefix: 'edgeward.',
  inactivity_timeout: 172800,
  maximum_duration: 2592000,
};

const OAUTH_MEMBER_DEFAULTS = {
  client_id: null,
  client_secret: null,
  scopes: [],
  email_addresses: [],
  email_domains: [],
};
const OAUTH_PROVIDERS_NULL = {
  github: null,
  facebook: null,
  microsoft: null,
  google: null,
  linkedin: null,
  gitlab: null,
  twitch: null,
  amazon: null,
};

const SAML_GENERATED_KEYS = [
  'assertion_consumer_service_url',
  'entity_id',
  'idp_metadata_url',
  'metadata_url',
  'request_signing_certificate_pem',
  'single_logout_url',
];

/** Every route module: the smallest body and its read form (defaults applied), then a full body and its read form. */
function moduleCases(): Array<{ name: string; cases: Array<[Json, Json]> }> {
  return [
    {
      name: 'backend',
      cases: [
        [
          { backend_id: backendId },
          {
            enabled: true,
            backend: { id: backendId, uri: `${t.baseUrl}/backends/tunnel_group/${backendId}` },
          },
        ],
      ],
    },
    {
      name: 'ip_restriction',
      cases: [
        [
          { enabled: false, ip_policy_ids: [policyId] },
          { enabled: false, ip_policies: [{ id: policyId, uri: `${t.baseUrl}/ip_policies/${policyId}` }] },
        ],
      ],
    },
    {
      name: 'circuit_breaker',
      cases: [
        [
          {},
          {
            enabled: true,
            tripped_duration: 10,
            rolling_window: 10,
            num_buckets: 10,
            volume_threshold: 20,
            error_threshold_percentage: 0.5,
          },
        ],
        [
          {
            enabled: false,
            tripped_duration: 0,
            rolling_window: 4294967295,
            num_buckets: 128,
            volume_threshold: 1,
            error_threshold_percentage: 1,
          },
          {
            enabled: false,
            tripped_duration: 0,
            rolling_window: 4294967295,
            num_buckets: 128,
            volume_threshold: 1,
            error_threshold_percentage: 1,
          },
        ],
      ],
    },
    {
      name: 'compression',
      cases: [
        [{}, { enabled: true }],
        [{ enabled: false }, { enabled: false }],
      ],
    },
    {
      name: 'request_headers',
      cases: [
        [{}, { enabled: true, add: {}, remove: [] }],
        [
          { add: { 'X-Forwarded-Team': 'web', 'x-empty': '' }, remove: ['Cookie', 'x-debug'] },
          { enabled: true, add: { 'X-Forwarded-Team': 'web', 'x-empty': '' }, remove: ['Cookie', 'x-debug'] },
        ],
      ],
    },
    {
      name: 'response_headers',
      cases: [
        [{}, { enabled: true, add: {}, remove: [] }],
        [
          { enabled: false, add: { 'Strict-Transport-Security': 'max-age=63072000' }, remove: ['Server'] },
          { enabled: false, add: { 'Strict-Transport-Security': 'max-age=63072000' }, remove: ['Server'] },
        ],
      ],
    },
    {
      name: 'webhook_verification',
      cases: [
        [
          { provider: 'github', secret: 'wh-case-secret-1' },
          { enabled: true, provider: 'github', secret: null },
        ],
        [{ provider: 'sns' }, { enabled: true, provider: 'sns', secret: null }],
      ],
    },
    {
      name: 'oauth',
      cases: [
        [
          { provider: { google: {} } },
          {
            enabled: true,
            provider: { ...OAUTH_PROVIDERS_NULL, google: OAUTH_MEMBER_DEFAULTS },
            ...SESSION_DEFAULTS,
            auth_check_interval: 3600,
          },
        ],
        [
          {
            enabled: false,
            provider: {
              github: {
                client_id: 'Iv1.abc',
                client_secret: 'oauth-case-secret-1',
                scopes: ['read:org'],
                email_addresses: ['ada@example.com'],
                email_domains: ['example.com'],
                teams: ['acme/platform'],
                organizations: ['acme'],
              },
              google: null,
            },
            options_passthrough: true,
            cookie_prefix: 'acme.',
            inactivity_timeout: 60,
            maximum_duration: 3600,
            auth_check_interval: 300,
          },
          {
            enabled: false,
            provider: {
              ...OAUTH_PROVIDERS_NULL,
              github: {
                client_id: 'Iv1.abc',
                client_secret: null,
                scopes: ['read:org'],
                email_addresses: ['ada@example.com'],
                email_domains: ['example.com'],
                teams: ['acme/platform'],
                organizations: ['acme'],
              },
            },
            options_passthrough: true,
            cookie_prefix: 'acme.',
            inactivity_timeout: 60,
            maximum_duration: 3600,
            auth_check_interval: 300,
          },
        ],
        [
          { provider: { github: {} } },
          {
            enabled: true,
            provider: {
              ...OAUTH_PROVIDERS_NULL,
              github: { ...OAUTH_MEMBER_DEFAULTS, teams: [], organizations: [] },
            },
            ...SESSION_DEFAULTS,
            auth_check_interval: 3600,
          },
        ],
      ],
    },
    {
      name: 'oidc',
      cases: [
        [
          { issuer: 'https://accounts.example.com', client_id: 'cid', client_secret: 'oidc-case-secret-1' },
          {
            enabled: true,
            ...SESSION_DEFAULTS,
            issuer: 'https://accounts.example.com',
            client_id: 'cid',
            client_secret: null,
            scopes: [],
          },
        ],
        [
          {
            enabled: false,
            options_passthrough: true,
            cookie_prefix: '',
            inactivity_timeout: 0,
            maximum_duration: 1,
            issuer: 'https://login.example.com/tenant/v2.0',
            client_id: 'cid2',
            client_secret: 'oidc-case-secret-2',
            scopes: ['profile', 'email'],
          },
          {
            enabled: false,
            options_passthrough: true,
            cookie_prefix: '',
            inactivity_timeout: 0,
            maximum_duration: 1,
            issuer: 'https://login.example.com/tenant/v2.0',
            client_id: 'cid2',
            client_secret: null,
            scopes: ['profile', 'email'],
          },
        ],
      ],
    },
    { name: 'websocket_tcp_converter', cases: [[{}, { enabled: true }]] },
    {
      name: 'user_agent_filter',
      cases: [
        [{}, { enabled: true, allow: [], deny: [] }],
        [
          { allow: ['^Mozilla/', 'curl'], deny: ['[Bb]ot\\b'] },
          { enabled: true, allow: ['^Mozilla/', 'curl'], deny: ['[Bb]ot\\b'] },
        ],
      ],
    },
    {
      name: 'policy',
      cases: [
        [
          { inbound: [{ name: 'deny-bots', expressions: ['true'], actions: [{ type: 'deny' }] }] },
          {
            enabled: true,
            inbound: [
              { name: 'deny-bots', expressions: ['true'], actions: [{ type: 'deny', config: null }] },
            ],
            outbound: null,
          },
        ],
      ],
    },
  ];
}

/** What a module of `name` reads as once set: for SAML the generated fields are checked apart. */
function comparable(name: string, body: Json): Json {
  if (name !== 'saml') return body;
  return Object.fromEntries(Object.entries(body).filter(([key]) => !SAML_GENERATED_KEYS.includes(key)));
}

describe('HTTPS route modules: PUT, GET, DELETE and the read form', () => {
  it('covers all thirteen modules of the route read form', async () => {
    const names = [...moduleCases().map((entry) => entry.name), 'saml'].sort();
    const { path } = await newRoute();
    const route = (await t.api('GET', path)).body;
    const moduleKeys = Object.keys(route).filter(
      (key) =>
        !['created_at', 'description', 'edge_id', 'id', 'match', 'match_type', 'metadata', 'uri'].includes(
          key,
        ),
    );
    expect(moduleKeys.sort()).toEqual(names);
    expect(names).toHaveLength(13);
  });

  it('PUT answers the read form (defaults applied), GET and the route and the edge show the same', async () => {
    for (const { name, cases } of moduleCases()) {
      const { edgeId, path } = await newRoute();
      expect((await t.api('GET', `${path}/${name}`)).status, `${name} unset`).toBe(404);
      for (const [input, output] of cases) {
        const put = await t.api('PUT', `${path}/${name}`, input);
        expect(put.status, `${name} ${JSON.stringify(input)}: ${JSON.stringify(put.body)}`).toBe(200);
        expect(Object.keys(put.body).sort(), name).toEqual(Object.keys(output).sort());
        expect(put.body, name).toEqual(output);
        const got = await t.api('GET', `${path}/${name}`);
        expect(got.status).toBe(200);
        expect(got.body, name).toEqual(output);
        expect((await t.api('GET', path)).body[name], name).toEqual(output);
        const edge = await t.api<{ routes: Json[] }>('GET', `/edges/https/${edgeId}`);
        expect(edge.body.routes[0]?.[name], name).toEqual(output);
        const listed = await t.api<{ routes: Json[] }>('GET', `/edges/https/${edgeId}/routes`);
        expect(listed.body.routes[0]?.[name], name).toEqual(output);
      }
      expect((await t.api('DELETE', `${path}/${name}`)).status).toBe(204);
      expect((await t.api('DELETE', `${path}/${name}`)).status, 'a retried delete succeeds').toBe(204);
      expect((await t.api('GET', `${path}/${name}`)).status).toBe(404);
      expect((await t.api('GET', path)).body[name]).toBeNull();
    }
  });

  it('sets every module in the route create body with the same read forms', async () => {
    const edgeId = (await t.api('POST', '/edges/https', {})).body.id as string;
    const body: Json = { match_type: 'exact_path', match: '/all' };
    const expected: Json = {};
    for (const { name, cases } of moduleCases()) {
      const [input, output] = cases[cases.length - 1] as [Json, Json];
      body[name] = input;
      expected[name] = output;
    }
    body.saml = { idp_metadata: IDP_METADATA };
    const created = await t.api('POST', `/edges/https/${edgeId}/routes`, body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    for (const [name, output] of Object.entries(expected)) expect(created.body[name], name).toEqual(output);
    expect(comparable('saml', created.body.saml as Json)).toEqual({
      enabled: true,
      ...SESSION_DEFAULTS,
      idp_metadata: IDP_METADATA,
      force_authn: false,
      allow_idp_initiated: false,
      authorized_groups: [],
      nameid_format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
    });
    const routeId = created.body.id as string;
    expect((created.body.saml as Json).entity_id).toBe(`${t.baseUrl}/saml/${routeId}/metadata`);
    // Nested messages name the module: `<module>.<field>`.
    const nested = await t.api('POST', `/edges/https/${edgeId}/routes`, {
      match_type: 'exact_path',
      match: '/nested',
      circuit_breaker: { num_buckets: 129 },
    });
    expect(nested.status).toBe(400);
    expect(nested.body.msg).toBe('circuit_breaker.num_buckets: must be at most 128');
    const nestedOauth = await t.api('POST', `/edges/https/${edgeId}/routes`, {
      match_type: 'exact_path',
      match: '/nested',
      oauth: { provider: { github: { scopes: ['repo'] } } },
    });
    expect(nestedOauth.body.msg).toBe(
      'oauth.provider.github.scopes: may only be set with both client_id and client_secret',
    );
  });

  it('404s module routes of an unknown route, and refuses unknown modules', async () => {
    const { edgeId, path } = await newRoute();
    const unknownRoute = `/edges/https/${edgeId}/routes/edghtsrt_missing`;
    expect((await t.api('PUT', `${unknownRoute}/compression`, {})).status).toBe(404);
    expect((await t.api('GET', `${unknownRoute}/saml`)).status).toBe(404);
    expect((await t.api('DELETE', `${unknownRoute}/oauth`)).status).toBe(404);
    expect((await t.api('PUT', `/edges/https/edghts_missing/routes/edghtsrt_x/compression`, {})).status).toBe(
      404,
    );
    expect((await t.api('PUT', `${path}/mutual_tls`, {})).status).toBe(404);
    const unset = await t.api('GET', `${path}/oidc`);
    expect(unset.status).toBe(404);
    expect(unset.body.error_code).toBe('ERR_EDGEWARD_400');
  });

  it('PUT refuses references to missing ids, naming the field', async () => {
    const { path } = await newRoute();
    const backend = await t.api('PUT', `${path}/backend`, { backend_id: 'bkdtg_missing' });
    expect(backend.status).toBe(400);
    expect(backend.body.msg).toMatch(/^backend_id: no tunnel-group backend/);
    const policy = await t.api('PUT', `${path}/ip_restriction`, { ip_policy_ids: [policyId, 'ipp_missing'] });
    expect(policy.body.msg).toMatch(/^ip_policy_ids\[1\]: no IP policy/);
  });
});

/** PUT `body` to the module and expect a 400 whose message is exactly `message`. */
async function expectRefused(
  path: string,
  name: string,
  body: unknown,
  message: string | RegExp,
): Promise<void> {
  const response = await t.api('PUT', `${path}/${name}`, body);
  expect(response.status, `${name} ${JSON.stringify(body)}`).toBe(400);
  expect(response.body.error_code).toBe('ERR_EDGEWARD_100');
  if (typeof message === 'string') expect(response.body.msg, JSON.stringify(body)).toBe(message);
  else expect(response.body.msg, JSON.stringify(body)).toMatch(message);
}

describe('route module constraints', () => {
  it('circuit_breaker: uint32 fields, num_buckets 1..128, error_threshold_percentage a fraction', async () => {
    const { path } = await newRoute();
    const fraction = 'error_threshold_percentage: must be between 0 and 1.0 (a fraction, not a percentage)';
    const cases: Array<[Json, string]> = [
      [{ num_buckets: 129 }, 'num_buckets: must be at most 128'],
      [{ num_buckets: 0 }, 'num_buckets: must be at least 1'],
      [{ num_buckets: 2.5 }, 'num_buckets: must be a whole number'],
      [{ error_threshold_percentage: 50 }, fraction],
      [{ error_threshold_percentage: 1.01 }, fraction],
      [{ error_threshold_percentage: -0.1 }, fraction],
      [{ error_threshold_percentage: '0.5' }, 'error_threshold_percentage: must be a number, got string'],
      [{ tripped_duration: -1 }, 'tripped_duration: must be at least 0'],
      [{ rolling_window: 4294967296 }, 'rolling_window: must be at most 4294967295'],
      [{ volume_threshold: 1.5 }, 'volume_threshold: must be a whole number'],
      [{ volume_threshold: '20' }, 'volume_threshold: must be a number, got string'],
      [{ enabled: 'yes' }, 'enabled: must be a boolean, got string'],
      [{ trip: 1 }, 'trip: unknown field'],
    ];
    for (const [body, message] of cases) await expectRefused(path, 'circuit_breaker', body, message);
    const edge = await t.api('PUT', `${path}/circuit_breaker`, {
      error_threshold_percentage: 0,
      num_buckets: 1,
    });
    expect(edge.status).toBe(200);
    expect(edge.body).toMatchObject({ error_threshold_percentage: 0, num_buckets: 1 });
  });

  it('request_headers and response_headers: header names are HTTP tokens, values have no CR or LF', async () => {
    const { path } = await newRoute();
    for (const name of ['request_headers', 'response_headers']) {
      await expectRefused(
        path,
        name,
        { add: { 'Bad Name': 'x' } },
        'add: "Bad Name" is not an HTTP header name (RFC 9110 token characters only)',
      );
      await expectRefused(
        path,
        name,
        { add: { 'X-A': 'a\r\nInjected: 1' } },
        'add.X-A: must not contain CR, LF or NUL',
      );
      await expectRefused(path, name, { add: { 'X-A': 'a\n' } }, 'add.X-A: must not contain CR, LF or NUL');
      await expectRefused(path, name, { add: { 'X-A': 7 } }, 'add.X-A: must be a string, got number');
      await expectRefused(
        path,
        name,
        { add: { 'X-A': '1', 'x-a': '2' } },
        'add: "X-A" and "x-a" name the same header (names are case-insensitive)',
      );
      await expectRefused(
        path,
        name,
        { remove: ['ok', 'bad:name'] },
        'remove[1]: must be an HTTP header name (RFC 9110 token characters only)',
      );
      await expectRefused(path, name, { remove: [''] }, /^remove\[0\]: must be an HTTP header name/);
      await expectRefused(path, name, { add: ['X-A'] }, /^add: must be an? (object|record)/);
    }
  });

  it('webhook_verification: a known provider, and a secret for every provider but sns', async () => {
    const { path } = await newRoute();
    await expectRefused(
      path,
      'webhook_verification',
      { provider: 'github' },
      "secret: is required for provider 'github'",
    );
    await expectRefused(
      path,
      'webhook_verification',
      { provider: 'stripe', secret: '' },
      "secret: is required for provider 'stripe'",
    );
    await expectRefused(
      path,
      'webhook_verification',
      { provider: 'slack', secret: null },
      "secret: is required for provider 'slack'",
    );
    await expectRefused(
      path,
      'webhook_verification',
      { provider: 'myspace', secret: 's' },
      /^provider: must be one of "bitbucket"/,
    );
    await expectRefused(path, 'webhook_verification', { secret: 's' }, /^provider: /);
    for (const provider of [
      'gitlab',
      'twilio',
      'shopify',
      'sendgrid',
      'mailgun',
      'pagerduty',
      'xero',
      'zendesk',
    ]) {
      const ok = await t.api('PUT', `${path}/webhook_verification`, { provider, secret: 's3cr3t' });
      expect(ok.status, provider).toBe(200);
      expect(ok.body).toEqual({ enabled: true, provider, secret: null });
    }
    const sns = await t.api('PUT', `${path}/webhook_verification`, { provider: 'sns', enabled: false });
    expect(sns.body).toEqual({ enabled: false, provider: 'sns', secret: null });
  });

  it('oauth: exactly one provider; scopes need client_id and client_secret; each needs the other', async () => {
    const { path } = await newRoute();
    const cases: Array<[Json, string | RegExp]> = [
      [{}, /^provider: /],
      [
        { provider: {} },
        'provider: must set exactly one of github, facebook, microsoft, google, linkedin, gitlab, twitch, amazon',
      ],
      [
        { provider: { github: null, google: null } },
        'provider: must set exactly one of github, facebook, microsoft, google, linkedin, gitlab, twitch, amazon',
      ],
      [
        { provider: { github: {}, google: {} } },
        'provider: must set exactly one identity provider; got github, google',
      ],
      [{ provider: { okta: {} } }, 'provider.okta: unknown field'],
      [
        { provider: { github: { scopes: ['read:org'] } } },
        'provider.github.scopes: may only be set with both client_id and client_secret',
      ],
      [
        { provider: { google: { client_id: 'x', scopes: ['email'] } } },
        'provider.google.scopes: may only be set with both client_id and client_secret',
      ],
      [
        { provider: { microsoft: { client_secret: 'x', scopes: ['User.Read'] } } },
        'provider.microsoft.scopes: may only be set with both client_id and client_secret',
      ],
      [
        { provider: { google: { client_id: 'x' } } },
        'provider.google.client_secret: is required when client_id is set',
      ],
      [
        { provider: { amazon: { client_secret: 'x' } } },
        'provider.amazon.client_id: is required when client_secret is set',
      ],
      [{ provider: { google: { teams: ['a/b'] } } }, 'provider.google.teams: unknown field'],
      [
        { provider: { github: { teams: ['platform'] } } },
        "provider.github.teams[0]: must be '<org>/<team>', e.g. 'acme/platform'",
      ],
      [
        { provider: { github: { organizations: ['not an org'] } } },
        'provider.github.organizations[0]: must be a GitHub organization slug',
      ],
      [
        { provider: { google: { email_addresses: ['ada@example.com', 'nope'] } } },
        'provider.google.email_addresses[1]: must be an email address',
      ],
      [
        { provider: { google: { email_domains: ['example com'] } } },
        'provider.google.email_domains[0]: must be a domain name, e.g. example.com',
      ],
      [{ provider: { google: {} }, cookie_prefix: 'a b' }, /^cookie_prefix: must be at most 64 characters/],
      [{ provider: { google: {} }, inactivity_timeout: -1 }, 'inactivity_timeout: must be at least 0'],
      [
        { provider: { google: {} }, auth_check_interval: 4294967296 },
        'auth_check_interval: must be at most 4294967295',
      ],
      [{ provider: { google: {} }, maximum_duration: 0.5 }, 'maximum_duration: must be a whole number'],
    ];
    for (const [body, message] of cases) await expectRefused(path, 'oauth', body, message);
    const withApp = await t.api('PUT', `${path}/oauth`, {
      provider: {
        twitch: { client_id: 'id', client_secret: 'oauth-twitch-secret', scopes: ['user:read:email'] },
      },
    });
    expect(withApp.status).toBe(200);
    expect((withApp.body.provider as Json).twitch).toEqual({
      client_id: 'id',
      client_secret: null,
      scopes: ['user:read:email'],
      email_addresses: [],
      email_domains: [],
    });
  });

  it('saml: idp_metadata must be XML with an EntityDescriptor; nameid_format from the SAML list', async () => {
    const { path } = await newRoute();
    const notXml =
      "idp_metadata: must be the identity provider's SAML metadata: XML with an EntityDescriptor element";
    const cases: Array<[Json, string | RegExp]> = [
      [{}, 'idp_metadata: is required'],
      [{ idp_metadata: '' }, notXml],
      [{ idp_metadata: 'https://idp.example.com/metadata' }, notXml],
      [{ idp_metadata: '<md:IDPSSODescriptor/>' }, notXml],
      [{ idp_metadata: '<EntityDescriptorX/>' }, notXml],
      [
        { idp_metadata: `<!DOCTYPE x [<!ENTITY a "b">]>${IDP_METADATA.replace(/^<\?xml[^>]*>\n/, '')}` },
        'idp_metadata: must not contain a DOCTYPE declaration',
      ],
      [
        { idp_metadata: `<EntityDescriptor>${'x'.repeat(262144)}</EntityDescriptor>` },
        'idp_metadata: must be at most 262144 bytes',
      ],
      [
        { idp_metadata: IDP_METADATA, nameid_format: 'email' },
        /^nameid_format: must be one of "urn:oasis:names:tc:SAML:2\.0/,
      ],
      [{ idp_metadata: IDP_METADATA, authorized_groups: [''] }, 'authorized_groups[0]: must not be empty'],
      [{ idp_metadata: IDP_METADATA, force_authn: 1 }, 'force_authn: must be a boolean, got number'],
      [{ idp_metadata: IDP_METADATA, entity_id: 'https://sp' }, 'entity_id: unknown field'],
      [
        { idp_metadata: IDP_METADATA, request_signing_certificate_pem: 'x' },
        'request_signing_certificate_pem: unknown field',
      ],
      [{ idp_metadata: IDP_METADATA, idp_metadata_url: 'https://idp' }, 'idp_metadata_url: unknown field'],
    ];
    for (const [body, message] of cases) await expectRefused(path, 'saml', body, message);
    for (const format of [
      'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
      'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
    ]) {
      const ok = await t.api('PUT', `${path}/saml`, { idp_metadata: IDP_METADATA, nameid_format: format });
      expect(ok.status, format).toBe(200);
      expect(ok.body.nameid_format).toBe(format);
    }
    // No namespace prefix is fine too.
    const plain = await t.api('PUT', `${path}/saml`, {
      idp_metadata: '<EntityDescriptor entityID="https://idp.example.com"></EntityDescriptor>',
    });
    expect(plain.status).toBe(200);
  });

  it('oidc: an https issuer, client_id and client_secret required', async () => {
    const { path } = await newRoute();
    const base = { issuer: 'https://accounts.example.com', client_id: 'cid', client_secret: 'cs' };
    const badIssuer = 'issuer: must be an https URL without query or fragment (the OpenID issuer identifier)';
    const cases: Array<[Json, string]> = [
      [{ ...base, issuer: undefined }, 'issuer: is required'],
      [{ ...base, issuer: 'http://accounts.example.com' }, badIssuer],
      [{ ...base, issuer: 'accounts.example.com' }, badIssuer],
      [{ ...base, issuer: 'https://accounts.example.com/?tenant=1' }, badIssuer],
      [{ ...base, issuer: 'https://accounts.example.com/#x' }, badIssuer],
      [{ ...base, client_id: undefined }, 'client_id: is required'],
      [{ ...base, client_secret: undefined }, 'client_secret: is required'],
      [{ ...base, client_secret: '' }, 'client_secret: must not be empty'],
      [{ ...base, scopes: [''] }, 'scopes[0]: must not be empty'],
      [
        { ...base, cookie_prefix: 'x;y' },
        'cookie_prefix: must be at most 64 characters valid in a cookie name (RFC 6265 token)',
      ],
    ];
    for (const [body, message] of cases) await expectRefused(path, 'oidc', body, message);
  });

  it('user_agent_filter: every entry compiles as a regular expression', async () => {
    const { path } = await newRoute();
    await expectRefused(
      path,
      'user_agent_filter',
      { allow: ['ok', '('] },
      /^allow\[1\]: is not a valid regular expression \(.+\)$/,
    );
    await expectRefused(
      path,
      'user_agent_filter',
      { deny: ['[a-'] },
      /^deny\[0\]: is not a valid regular expression/,
    );
    await expectRefused(path, 'user_agent_filter', { deny: [''] }, 'deny[0]: must not be empty');
    await expectRefused(path, 'user_agent_filter', { allow: 'bot' }, /^allow: must be an array/);
  });

  it('compression and websocket_tcp_converter take only enabled', async () => {
    const { path } = await newRoute();
    await expectRefused(path, 'compression', { level: 9 }, 'level: unknown field');
    await expectRefused(
      path,
      'websocket_tcp_converter',
      { enabled: null },
      'enabled: must be a boolean, got null',
    );
  });
});

describe('SAML service-provider fields', () => {
  it('generates the SP URLs and a real self-signed certificate once per route, kept across PUTs', async () => {
    const { routeId, path } = await newRoute();
    const first = await t.api('PUT', `${path}/saml`, { idp_metadata: IDP_METADATA });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(
      [
        'allow_idp_initiated',
        'authorized_groups',
        'cookie_prefix',
        'enabled',
        'force_authn',
        'idp_metadata',
        'inactivity_timeout',
        'maximum_duration',
        'nameid_format',
        'options_passthrough',
        ...SAML_GENERATED_KEYS,
      ].sort(),
    );
    expect(first.body).toMatchObject({
      entity_id: `${t.baseUrl}/saml/${routeId}/metadata`,
      metadata_url: `${t.baseUrl}/saml/${routeId}/metadata`,
      assertion_consumer_service_url: `${t.baseUrl}/saml/${routeId}/acs`,
      single_logout_url: `${t.baseUrl}/saml/${routeId}/slo`,
      idp_metadata_url: '',
    });
    const pem = first.body.request_signing_certificate_pem as string;
    expect(pem).toMatch(/^-----BEGIN CERTIFICATE-----\n[\s\S]+\n-----END CERTIFICATE-----\n$/);
    expect(pem).not.toContain('PRIVATE KEY');
    const printed = execFileSync('openssl', ['x509', '-noout', '-subject', '-dates'], {
      input: pem,
    }).toString();
    expect(printed).toContain(`CN = edgeward SAML SP ${routeId}`);
    const notBefore = new Date(/notBefore=(.+)/.exec(printed)?.[1] ?? '');
    const notAfter = new Date(/notAfter=(.+)/.exec(printed)?.[1] ?? '');
    expect(Math.abs(notBefore.getTime() - Date.now())).toBeLessThan(5 * 60 * 1000);
    expect(Math.round((notAfter.getTime() - notBefore.getTime()) / 86_400_000)).toBe(3650);
    const certificate = new X509Certificate(pem);
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(certificate.publicKey.asymmetricKeyType).toBe('rsa');

    // The private key is sealed with the route and matches the certificate.
    const row = await t.server.app.edgeward.db
      .selectFrom('https_edge_routes')
      .select('modules')
      .where('id', '=', routeId)
      .executeTakeFirstOrThrow();
    const stored = JSON.parse(row.modules).saml.service_provider;
    expect(JSON.stringify(stored)).not.toContain('PRIVATE KEY');
    const box = new SecretBox(loadSecretKey(t.dataDir, t.secretKey));
    const key = box.open(
      stored.request_signing_key_sealed,
      `https_edge_routes:${routeId}:saml.request_signing_key`,
    );
    expect(key).toContain('-----BEGIN PRIVATE KEY-----');
    expect(certificate.checkPrivateKey(createPrivateKey(key))).toBe(true);

    // A later PUT (and a PATCH of the route) changes the settings, not the certificate.
    const second = await t.api('PUT', `${path}/saml`, { idp_metadata: IDP_METADATA, force_authn: true });
    expect(second.body.force_authn).toBe(true);
    expect(second.body.request_signing_certificate_pem).toBe(pem);
    const patched = await t.api('PATCH', path, {
      saml: { idp_metadata: IDP_METADATA, allow_idp_initiated: true },
    });
    expect(patched.status).toBe(200);
    expect((patched.body.saml as Json).allow_idp_initiated).toBe(true);
    expect((patched.body.saml as Json).request_signing_certificate_pem).toBe(pem);
    expect((await t.api('GET', `${path}/saml`)).body.request_signing_certificate_pem).toBe(pem);

    // Another route gets its own key pair.
    const other = await newRoute();
    const otherSaml = await t.api('PUT', `${other.path}/saml`, { idp_metadata: IDP_METADATA });
    expect(otherSaml.body.request_signing_certificate_pem).not.toBe(pem);
    expect(otherSaml.body.entity_id).toBe(`${t.baseUrl}/saml/${other.routeId}/metadata`);
  });

  it("derives the SP URLs from the edge's first hostport on every read (base_url while it has none)", async () => {
    const { edgeId, routeId, path } = await newRoute();
    const spUrls = (origin: string) => ({
      entity_id: `${origin}/saml/${routeId}/metadata`,
      metadata_url: `${origin}/saml/${routeId}/metadata`,
      assertion_consumer_service_url: `${origin}/saml/${routeId}/acs`,
      single_logout_url: `${origin}/saml/${routeId}/slo`,
    });
    /** The SAML module of the route wherever it is shown. */
    const everywhere = async (): Promise<Json[]> => [
      (await t.api('GET', `${path}/saml`)).body,
      (await t.api('GET', path)).body.saml as Json,
      ((await t.api<{ routes: Json[] }>('GET', `/edges/https/${edgeId}/routes`)).body.routes[0] as Json)
        .saml as Json,
      ((await t.api<{ routes: Json[] }>('GET', `/edges/https/${edgeId}`)).body.routes[0] as Json)
        .saml as Json,
    ];
    const put = await t.api('PUT', `${path}/saml`, { idp_metadata: IDP_METADATA });
    expect(put.body).toMatchObject(spUrls(t.baseUrl));

    const host = `sso${++matchCounter}.example.com`;
    const patched = await t.api<{ routes: Json[] }>('PATCH', `/edges/https/${edgeId}`, {
      hostports: [`*.${host}:443`, `${host}:443`, `other.${host}:443`],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    // A wildcard names no single URL: the first concrete hostport is the origin; 443 is left out.
    expect((patched.body.routes[0] as Json).saml).toMatchObject(spUrls(`https://${host}`));
    for (const saml of await everywhere()) expect(saml).toMatchObject(spUrls(`https://${host}`));

    await t.api('PATCH', `/edges/https/${edgeId}`, { hostports: [`${host}:8443`] });
    for (const saml of await everywhere()) expect(saml).toMatchObject(spUrls(`https://${host}:8443`));
    const again = await t.api('PUT', `${path}/saml`, { idp_metadata: IDP_METADATA, force_authn: true });
    expect(again.body).toMatchObject(spUrls(`https://${host}:8443`));

    // A route created on an edge with hostports answers with the edge's URLs straight away.
    const created = await t.api('POST', `/edges/https/${edgeId}/routes`, {
      match_type: 'exact_path',
      match: '/sso-created',
      saml: { idp_metadata: IDP_METADATA },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((created.body.saml as Json).entity_id).toBe(
      `https://${host}:8443/saml/${created.body.id}/metadata`,
    );
  });

  it('generates the key pair before the write transaction opens, and only for a route without one', async () => {
    const db = t.server.app.edgeward.db;
    const probes: string[] = [];
    // While a key is generated, can another request reach the database? Not if a transaction holds it.
    const spy = vi.spyOn(webcrypto.subtle, 'generateKey').mockImplementation((async (
      algorithm: webcrypto.RsaHashedKeyGenParams,
      extractable: boolean,
      usages: webcrypto.KeyUsage[],
    ) => {
      const probe = db
        .selectFrom('events')
        .select('id')
        .limit(1)
        .execute()
        .then(() => 'free');
      probes.push(await Promise.race([probe, sleep(2000).then(() => 'held by a transaction')]));
      return generateKey(algorithm, extractable, usages);
    }) as typeof webcrypto.subtle.generateKey);
    try {
      const { edgeId, path } = await newRoute();
      expect((await t.api('PUT', `${path}/saml`, { idp_metadata: IDP_METADATA })).status).toBe(200);
      expect(probes).toEqual(['free']);
      // The route has its key pair: later PUTs and PATCHes generate none.
      expect((await t.api('PUT', `${path}/saml`, { idp_metadata: IDP_METADATA })).status).toBe(200);
      expect((await t.api('PATCH', path, { saml: { idp_metadata: IDP_METADATA } })).status).toBe(200);
      expect(probes).toEqual(['free']);
      // A route created with SAML, and a route given SAML by a PATCH, each get theirs.
      const created = await t.api('POST', `/edges/https/${edgeId}/routes`, {
        match_type: 'exact_path',
        match: `/keys${++matchCounter}`,
        saml: { idp_metadata: IDP_METADATA },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const other = await newRoute();
      expect((await t.api('PATCH', other.path, { saml: { idp_metadata: IDP_METADATA } })).status).toBe(200);
      expect(probes).toEqual(['free', 'free', 'free']);
      // Removing the module and setting it again makes a new one.
      expect((await t.api('DELETE', `${path}/saml`)).status).toBe(204);
      expect((await t.api('PUT', `${path}/saml`, { idp_metadata: IDP_METADATA })).status).toBe(200);
      expect(probes).toEqual(['free', 'free', 'free', 'free']);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('secrets of route modules', () => {
  it('never echoes webhook secrets or client secrets, stores them sealed, and keeps them out of the file', async () => {
    const { edgeId, routeId, path } = await newRoute();
    const webhookSecret = `whsec-${randomUUID()}`;
    const oauthSecret = `oauth-${randomUUID()}`;
    const oidcSecret = `oidc-${randomUUID()}`;
    const responses: string[] = [];
    const record = async (method: string, url: string, body?: unknown) => {
      const response = await t.api(method, url, body);
      expect(response.status, `${method} ${url}: ${response.text}`).toBeLessThan(300);
      responses.push(response.text);
      return response;
    };
    await record('PUT', `${path}/webhook_verification`, { provider: 'stripe', secret: webhookSecret });
    await record('PUT', `${path}/oauth`, {
      provider: { gitlab: { client_id: 'gl', client_secret: oauthSecret, scopes: ['read_user'] } },
    });
    await record('PUT', `${path}/oidc`, {
      issuer: 'https://id.example.com',
      client_id: 'oc',
      client_secret: oidcSecret,
    });
    for (const url of [`${path}/webhook_verification`, `${path}/oauth`, `${path}/oidc`, path]) {
      await record('GET', url);
    }
    await record('GET', `/edges/https/${edgeId}`);
    await record('GET', `/edges/https/${edgeId}/routes`);
    await record('GET', '/edges/https');
    // Through the route body as well (create and update).
    const viaCreate = await record('POST', `/edges/https/${edgeId}/routes`, {
      match_type: 'exact_path',
      match: '/secret-create',
      webhook_verification: { provider: 'github', secret: webhookSecret },
      oauth: { provider: { microsoft: { client_id: 'ms', client_secret: oauthSecret } } },
      oidc: { issuer: 'https://id.example.com', client_id: 'oc', client_secret: oidcSecret },
    });
    await record('PATCH', `/edges/https/${edgeId}/routes/${viaCreate.body.id}`, {
      webhook_verification: { provider: 'github', secret: webhookSecret },
    });
    for (const text of responses) {
      for (const secret of [webhookSecret, oauthSecret, oidcSecret]) expect(text).not.toContain(secret);
    }
    const route = (await t.api('GET', path)).body as Record<string, Json>;
    expect(route.webhook_verification?.secret).toBeNull();
    const oauthProvider = route.oauth?.provider as Record<string, Json> | undefined;
    expect(oauthProvider?.gitlab?.client_secret).toBeNull();
    expect(route.oidc?.client_secret).toBeNull();

    // Sealed with the route and the field they belong to.
    const row = await t.server.app.edgeward.db
      .selectFrom('https_edge_routes')
      .select('modules')
      .where('id', '=', routeId)
      .executeTakeFirstOrThrow();
    const modules = JSON.parse(row.modules);
    const box = new SecretBox(loadSecretKey(t.dataDir, t.secretKey));
    const context = (field: string) => `https_edge_routes:${routeId}:${field}`;
    expect(box.open(modules.webhook_verification.secret_sealed, context('webhook_verification.secret'))).toBe(
      webhookSecret,
    );
    expect(
      box.open(
        modules.oauth.provider.gitlab.client_secret_sealed,
        context('oauth.provider.gitlab.client_secret'),
      ),
    ).toBe(oauthSecret);
    expect(box.open(modules.oidc.client_secret_sealed, context('oidc.client_secret'))).toBe(oidcSecret);
    expect(() =>
      box.open(modules.oidc.client_secret_sealed, context('oauth.provider.gitlab.client_secret')),
    ).toThrow();

    // Events carry the read form, so no secret either.
    const events = await t.server.app.edgeward.db.selectFrom('events').select('payload').execute();
    for (const { payload } of events) {
      for (const secret of [webhookSecret, oauthSecret, oidcSecret]) expect(payload).not.toContain(secret);
    }
    for (const { source, bytes } of await storedData(t)) {
      for (const secret of [webhookSecret, oauthSecret, oidcSecret])
        expect(bytes.includes(secret), source).toBe(false);
      expect(bytes.includes('BEGIN PRIVATE KEY'), source).toBe(false);
    }
  });
});
