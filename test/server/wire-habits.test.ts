import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_FILE } from '../../src/server/openapi/write.js';
import { IDP_METADATA, insertTunnelSession } from '../support/fixtures.js';
import { OpensslWorkspace } from '../support/openssl.js';
import { type ApiResponse, startTestServer, type TestServer } from '../support/server.js';

/**
 * Habits of clients written for other APIs, proven on the wire for every operation of the OpenAPI
 * document: an empty body with `Content-Type: application/json` is no body; `; charset=utf-8` is
 * JSON too; path parameters repeated in a body are accepted when equal, refused by name when not;
 * a method a path does not have is a 405 whose `Allow` lists the documented methods.
 */

type Json = Record<string, unknown>;
type Params = Record<string, string>;

interface DocumentOperation {
  requestBody?: { required?: boolean };
  responses: Record<string, unknown>;
  parameters?: Array<{ in: string; name: string; schema?: { pattern?: string } }>;
}
type OpenApiDocument = { paths: Record<string, Record<string, DocumentOperation>> };

interface Operation {
  /** `PATCH /ip_policies/{id}`. */
  name: string;
  method: string;
  /** The documented path template. */
  path: string;
  /** Names of its path parameters, in path order. */
  params: string[];
  hasBody: boolean;
  bodyRequired: boolean;
  /** The one documented 2xx status. */
  success: number;
}

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const DOCUMENT = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as OpenApiDocument;

const OPERATIONS: Operation[] = Object.entries(DOCUMENT.paths).flatMap(([path, methods]) =>
  Object.entries(methods)
    .filter(([method]) => HTTP_METHODS.includes(method))
    .map(([method, operation]) => ({
      name: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      path,
      params: [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string),
      hasBody: operation.requestBody !== undefined,
      bodyRequired: operation.requestBody?.required === true,
      success: Number(Object.keys(operation.responses).find((status) => status.startsWith('2'))),
    })),
);
/** Every operation counted straight from the document, for the coverage check. */
const OPERATION_COUNT = Object.values(DOCUMENT.paths)
  .map((methods) => Object.keys(methods).length)
  .reduce((sum, count) => sum + count, 0);

/** The agent commands: without a connected agent they answer 400 ERR_EDGEWARD_900 whatever the framing. */
const isAgentCommand = (op: Operation) => /^\/tunnel_sessions\/\{id\}\/\w+$/.test(op.path);
/** Actions on an item that take an empty body, like the agent commands, but succeed here. */
const isEmptyBodyAction = (op: Operation) => /^\/event_destinations\/\{id\}\/test_event$/.test(op.path);

let t: TestServer;
let ssl: OpensslWorkspace;
/** Resources the bodies and fixtures refer to, created once. */
const refs = {
  backendId: '',
  policyId: '',
  caId: '',
  caPem: '',
  sshCaId: '',
  destinationId: '',
  tlsCertificatePem: '',
  tlsPrivateKeyPem: '',
};

let counter = 0;
const freshDomain = () => `wire-${Date.now().toString(36)}-${++counter}.example.com`;

/** A fresh ed25519 public key line (SSH credentials refuse a key already registered). */
function sshPublicKey(): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  const sshString = (data: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, data.length]), data]);
  const blob = Buffer.concat([sshString(Buffer.from('ssh-ed25519')), sshString(raw)]);
  return `ssh-ed25519 ${blob.toString('base64')} wire@edgeward`;
}

/** A valid create body per collection: the POST of check 2, and how fixtures are made. */
const CREATE_BODIES: Record<string, () => Json> = {
  '/agent_ingresses': () => ({ domain: freshDomain(), description: 'wire habits' }),
  '/ssh_certificate_authorities': () => ({ description: 'wire habits' }),
  '/ssh_host_certificates': () => ({
    ssh_certificate_authority_id: refs.sshCaId,
    public_key: sshPublicKey(),
    principals: ['host.example.com'],
  }),
  '/ssh_user_certificates': () => ({
    ssh_certificate_authority_id: refs.sshCaId,
    public_key: sshPublicKey(),
    principals: ['ada'],
  }),
  '/ssh_credentials': () => ({ public_key: sshPublicKey(), acl: ['bind:ssh.example.com'] }),
  '/credentials': () => ({ description: 'wire habits', acl: ['bind:wire.example.com'] }),
  '/backends/tunnel_group': () => ({ labels: { app: 'wire' } }),
  '/ip_policies': () => ({ description: 'wire habits' }),
  '/ip_policy_rules': () => ({ ip_policy_id: refs.policyId, cidr: '198.51.100.0/24', action: 'allow' }),
  '/reserved_addrs': () => ({ region: 'eu', description: 'wire habits' }),
  '/bot_users': () => ({ name: 'wire bot' }),
  '/api_keys': () => ({ description: 'wire habits' }),
  '/certificate_authorities': () => ({ ca_pem: refs.caPem, description: 'wire habits' }),
  '/tls_certificates': () => ({
    certificate_pem: refs.tlsCertificatePem,
    private_key_pem: refs.tlsPrivateKeyPem,
  }),
  '/event_destinations': () => ({ target: { datadog: { api_key: 'dd-wire-habits-key' } } }),
  '/event_subscriptions': () => ({
    sources: [{ type: 'ip_policy_created.v0' }],
    destination_ids: [refs.destinationId],
  }),
  '/event_subscriptions/{id}/sources': () => ({ type: 'ip_policy_deleted.v0' }),
  // Edges and routes without modules, so a PUT of a module is seen to set it.
  '/edges/tls': () => ({ description: 'wire habits' }),
  '/edges/https': () => ({ description: 'wire habits' }),
  '/edges/tcp': () => ({ description: 'wire habits' }),
  '/edges/https/{edge_id}/routes': () => ({ match_type: 'path_prefix', match: '/wire', description: 'r' }),
};

/** A valid PATCH body per item path; the others take `DEFAULT_UPDATE`. */
const UPDATE_BODIES: Record<string, Json> = {
  '/bot_users/{id}': { name: 'renamed wire bot', active: false },
  '/backends/tunnel_group/{id}': { labels: { app: 'patched' } },
  '/ip_policy_rules/{id}': { action: 'deny', description: 'patched' },
  '/credentials/{id}': { acl: ['bind:patched.example.com'] },
  '/ssh_credentials/{id}': { acl: ['bind:patched.example.com'] },
  '/edges/https/{edge_id}/routes/{id}': { match: '/patched' },
};
const DEFAULT_UPDATE: Json = { description: 'patched', metadata: '{"by":"wire habits"}' };

/** A valid PUT body per module name (edges and routes alike). */
const MODULE_BODIES: Record<string, () => Json> = {
  backend: () => ({ backend_id: refs.backendId }),
  ip_restriction: () => ({ ip_policy_ids: [refs.policyId] }),
  mutual_tls: () => ({ certificate_authority_ids: [refs.caId] }),
  tls_termination: () => ({ min_version: '1.3' }),
  policy: () => ({ inbound: [{ name: 'deny-all', expressions: ['true'], actions: [{ type: 'deny' }] }] }),
  circuit_breaker: () => ({ error_threshold_percentage: 0.25 }),
  compression: () => ({ enabled: false }),
  request_headers: () => ({ add: { 'x-wire': 'habits' } }),
  response_headers: () => ({ remove: ['Server'] }),
  webhook_verification: () => ({ provider: 'github', secret: 'wire-habits-secret' }),
  oauth: () => ({ provider: { google: {} } }),
  saml: () => ({ idp_metadata: IDP_METADATA }),
  oidc: () => ({ issuer: 'https://accounts.example.com', client_id: 'cid', client_secret: 'wire-secret' }),
  websocket_tcp_converter: () => ({ enabled: false }),
  user_agent_filter: () => ({ deny: ['bot'] }),
};

/** `/edges/tls/{id}/backend` -> the edge path and `backend`; routes' modules alike. */
const MODULE_PATH = /^(\/edges\/\w+\/\{id\}|\/edges\/https\/\{edge_id\}\/routes\/\{id\})\/(\w+)$/;

function fill(template: string, params: Params): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`no value for {${name}} of ${template}`);
    return encodeURIComponent(value);
  });
}

async function insertSession(): Promise<string> {
  return (await insertTunnelSession(t)).id;
}

/**
 * Path parameters naming fresh resources for `template`, made through the API (tunnel sessions: in
 * the database). Module paths get a fresh edge or route with the module set unless `withModule` is
 * false (a PUT then visibly sets it).
 */
async function freshParams(template: string, withModule = true): Promise<Params> {
  if (!template.includes('{')) return {};
  if (template.startsWith('/tunnel_sessions/{id}')) return { id: await insertSession() };
  const module = MODULE_PATH.exec(template);
  if (module) {
    const [, parent = '', name = ''] = module;
    const params = await freshParams(parent);
    if (withModule) {
      const set = await t.api('PUT', fill(template, params), moduleBody(name));
      expect(set.status, `fixture ${template}: ${set.text}`).toBe(200);
    }
    return params;
  }
  const item = /^(.*)\/\{(\w+)\}$/.exec(template);
  if (item) {
    // `/edges/https/{edge_id}` is the edge `/edges/https/{id}`: the id of what POST creates.
    const [, collection = '', name = ''] = item;
    const parent = await freshParams(collection);
    const created = await t.api('POST', fill(collection, parent), createBody(collection));
    expect(created.status, `fixture ${template}: ${created.text}`).toBe(201);
    return { ...parent, [name]: String(created.body.id ?? created.body[name]) };
  }
  // A collection inside an item: `/edges/https/{edge_id}/routes`, `/event_subscriptions/{id}/sources`.
  return freshParams(template.slice(0, template.lastIndexOf('/')));
}

function createBody(collection: string): Json {
  const body = CREATE_BODIES[collection];
  if (!body) throw new Error(`no create body for ${collection}`);
  return body();
}

function moduleBody(name: string): Json {
  const body = MODULE_BODIES[name];
  if (!body) throw new Error(`no body for the module ${name}`);
  return body();
}

/** A valid body of the operation: a create, an update, a module, or the empty agent command. */
function validBody(op: Operation): Json {
  if (isAgentCommand(op) || isEmptyBodyAction(op)) return {};
  if (op.method === 'POST') return createBody(op.path);
  if (op.method === 'PATCH') return { ...(UPDATE_BODIES[op.path] ?? DEFAULT_UPDATE) };
  const module = MODULE_PATH.exec(op.path);
  if (op.method === 'PUT' && module) return moduleBody(module[2] ?? '');
  throw new Error(`no valid body for ${op.name}`);
}

/** How a request frames its body: no Content-Type at all, or one of two JSON media types. */
type Framing = 'none' | 'application/json' | 'application/json; charset=utf-8';
const JSON_TYPES = ['application/json', 'application/json; charset=utf-8'] as const;

/** `body` undefined: no body at all, or (with a JSON type) an empty one; GET cannot carry one in fetch. */
function send(op: Operation, params: Params, framing: Framing, body?: Json): Promise<ApiResponse> {
  const headers: Record<string, string> = framing === 'none' ? {} : { 'content-type': framing };
  let rawBody: string | undefined;
  if (body !== undefined) rawBody = JSON.stringify(body);
  else if (framing !== 'none' && op.method !== 'GET') rawBody = '';
  return t.api(op.method, fill(op.path, params), undefined, { rawBody, headers });
}

/** Values that differ between two equivalent fresh fixtures; everything else must be equal. */
const VOLATILE_KEYS = new Set([
  'created_at',
  'token',
  'addr',
  'domain',
  'ns_targets',
  'region_domains',
  'public_key',
  'fingerprint',
  'certificate',
  'valid_after',
  'valid_until',
  'request_signing_certificate_pem',
  'operation_id',
]);
const ID_IN_TEXT = /\b[a-z]+_[0-9A-Za-z]{27}\b/g;

/** A response body with ids and per-fixture values masked, so equivalent fixtures compare equal. */
function comparable(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(ID_IN_TEXT, '<id>');
  if (Array.isArray(value)) return value.map(comparable);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !VOLATILE_KEYS.has(key))
        .map(([key, item]) => [key, comparable(item)]),
    );
  }
  return value;
}

/** The nearest path at or above `template` that has a GET: where a change is seen. */
function observedPath(template: string): string {
  let path = template;
  while (!DOCUMENT.paths[path]?.get) path = path.slice(0, path.lastIndexOf('/'));
  return path;
}

/** What a GET shows after the request: the created resource of a create, else the observed path. */
async function observe(op: Operation, params: Params, response: ApiResponse): Promise<ApiResponse> {
  const created = op.method === 'POST' && response.status === 201 ? response.body.uri : undefined;
  const path = typeof created === 'string' ? created : fill(observedPath(op.path), params);
  return t.api('GET', path);
}

interface Outcome {
  status: number;
  error_code: unknown;
  body: unknown;
  /** Status and body of the GET after the request. */
  after: unknown;
}

async function outcomeOf(op: Operation, params: Params, response: ApiResponse): Promise<Outcome> {
  const after = await observe(op, params, response);
  return {
    status: response.status,
    error_code: response.body?.error_code,
    body: comparable(response.body),
    after: { status: after.status, body: comparable(after.body) },
  };
}

/** The documented success, or for agent commands the refusal of an unconnected agent. */
function expectSuccess(op: Operation, label: string, response: ApiResponse): void {
  if (isAgentCommand(op)) {
    expect(
      { status: response.status, code: response.body?.error_code },
      `${label}: ${response.text}`,
    ).toEqual({
      status: 400,
      code: 'ERR_EDGEWARD_900',
    });
  } else {
    expect(response.status, `${label}: ${response.text}`).toBe(op.success);
  }
}

/** Check 1: an empty body with a JSON Content-Type is the same request as one without a body. */
async function expectEmptyJsonIsNoBody(op: Operation): Promise<void> {
  // A GET changes nothing: one fixture serves all framings. Anything else gets a fresh one each.
  const shared = op.method === 'GET' ? await freshParams(op.path) : undefined;
  const outcomes = new Map<Framing, Outcome>();
  for (const framing of ['none', ...JSON_TYPES] as const) {
    const params = shared ?? (await freshParams(op.path));
    const response = await send(op, params, framing);
    const label = `${op.name}, empty body, Content-Type: ${framing}`;
    expect(response.status, `${label}: ${response.text}`).not.toBe(415);
    expect(response.body?.error_code, `${label}: ${response.text}`).not.toBe('ERR_EDGEWARD_102');
    expect(response.status, `${label}: ${response.text}`).toBeLessThan(500);
    if (framing === 'none') {
      if (op.bodyRequired) {
        // No body where one is required: the missing field is named, like any invalid body.
        expect(response.status, `${label}: ${response.text}`).toBe(400);
        expect(response.body.error_code).toBe('ERR_EDGEWARD_100');
      } else {
        expectSuccess(op, label, response);
      }
    }
    const outcome = await outcomeOf(op, params, response);
    // A DELETE really deleted: the resource (or module, or source) is gone.
    if (op.method === 'DELETE') expect(outcome.after, label).toMatchObject({ status: 404 });
    outcomes.set(framing, outcome);
  }
  for (const framing of JSON_TYPES) {
    expect(outcomes.get(framing), `${op.name}: empty body with ${framing} vs no Content-Type`).toEqual(
      outcomes.get('none'),
    );
  }
}

/** Checks 2 and 3: a valid body as `; charset=utf-8`, and with the path parameters repeated. */
async function expectBodyHabits(op: Operation): Promise<void> {
  const fixture = () => freshParams(op.path, false);
  const outcomes = new Map<Framing, Outcome>();
  for (const framing of JSON_TYPES) {
    const params = await fixture();
    const response = await send(op, params, framing, validBody(op));
    expectSuccess(op, `${op.name}, valid body, Content-Type: ${framing}`, response);
    outcomes.set(framing, await outcomeOf(op, params, response));
  }
  const plain = outcomes.get('application/json');
  expect(outcomes.get('application/json; charset=utf-8'), `${op.name}: charset=utf-8 vs plain`).toEqual(
    plain,
  );
  if (op.params.length === 0 || !['PATCH', 'PUT', 'POST'].includes(op.method)) return;

  const params = await fixture();
  const echoed = await send(op, params, 'application/json', { ...validBody(op), ...params });
  expectSuccess(op, `${op.name}, path parameters repeated in the body`, echoed);
  expect(await outcomeOf(op, params, echoed), `${op.name}: repeated path parameters vs none`).toEqual(plain);

  for (const name of op.params) {
    const before = await t.api('GET', fill(observedPath(op.path), params));
    const body = { ...validBody(op), ...params, [name]: otherValue(params[name] as string) };
    const refused = await send(op, params, 'application/json', body);
    const label = `${op.name} with a different ${name} in the body`;
    expect({ status: refused.status, code: refused.body?.error_code }, `${label}: ${refused.text}`).toEqual({
      status: 400,
      code: 'ERR_EDGEWARD_100',
    });
    expect(refused.body.msg, label).toMatch(new RegExp(`^${name}: `));
    const after = await t.api('GET', fill(observedPath(op.path), params));
    expect({ status: after.status, body: after.body }, `${label}: unchanged`).toEqual({
      status: before.status,
      body: before.body,
    });
  }
}

/** Another value of the same form: an id of the same kind, or another text. */
function otherValue(value: string): string {
  const id = /^([a-z]+_)([0-9A-Za-z]{27})$/.exec(value);
  if (!id) return `${value}-other`;
  const tail = id[2] === '0'.repeat(27) ? '1'.repeat(27) : '0'.repeat(27);
  return `${id[1]}${tail}`;
}

beforeAll(async () => {
  t = await startTestServer();
  ssl = new OpensslWorkspace();
  const { ca, leaf } = ssl.caAndLeaf('wire.example.com', 'Wire Habits Root');
  refs.caPem = ca.pem;
  refs.tlsCertificatePem = leaf.pem;
  refs.tlsPrivateKeyPem = leaf.key.pem;
  const create = async (path: string, body: Json) => {
    const created = await t.api('POST', path, body);
    expect(created.status, `${path}: ${created.text}`).toBe(201);
    return String(created.body.id);
  };
  refs.backendId = await create('/backends/tunnel_group', { labels: { app: 'web' } });
  refs.policyId = await create('/ip_policies', { description: 'referenced by modules and rules' });
  refs.caId = await create('/certificate_authorities', { ca_pem: ca.pem });
  refs.sshCaId = await create('/ssh_certificate_authorities', {});
  refs.destinationId = await create('/event_destinations', CREATE_BODIES['/event_destinations']?.() ?? {});
});
afterAll(async () => {
  await t?.stop();
  ssl?.cleanup();
});

describe('wire habits: the table covers the API', () => {
  it('has one case per operation of the document, and the server serves the same document', async () => {
    expect(OPERATIONS).toHaveLength(OPERATION_COUNT);
    expect(OPERATIONS.length).toBe(t.server.app.edgeward.routes.length);
    expect(new Set(OPERATIONS.map((op) => op.name)).size).toBe(OPERATIONS.length);
    const served = await t.api<OpenApiDocument>('GET', '/openapi.json', undefined, {
      key: null,
      version: null,
    });
    expect(served.status).toBe(200);
    expect(served.body.paths).toEqual(DOCUMENT.paths);
  });

  it('has a valid body for every operation with a body', () => {
    for (const op of OPERATIONS.filter((candidate) => candidate.hasBody)) {
      expect(() => validBody(op), op.name).not.toThrow();
    }
  });
});

describe('wire habits: every operation', () => {
  for (const op of OPERATIONS) {
    it(op.name, async () => {
      await expectEmptyJsonIsNoBody(op);
      if (op.hasBody) await expectBodyHabits(op);
    });
  }
});

/** Methods tried on every path; fetch cannot send TRACE or CONNECT. */
const PROBED_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

describe('wire habits: a method a path does not have is a 405 naming the ones it has', () => {
  const paths = Object.entries(DOCUMENT.paths);
  it('covers every path', () => {
    expect(paths.length).toBe(new Set(OPERATIONS.map((op) => op.path)).size);
  });

  for (const [path, methods] of paths) {
    it(`405 on ${path}`, async () => {
      const documented = Object.keys(methods).map((method) => method.toUpperCase());
      const allowed = [...documented, ...(documented.includes('GET') ? ['HEAD'] : [])].sort();
      const missing = PROBED_METHODS.filter((method) => !documented.includes(method));
      expect(missing.length).toBeGreaterThan(0);
      // A 405 does not look the resource up: any value will do for each parameter.
      const params = Object.fromEntries(
        [...path.matchAll(/\{(\w+)\}/g)].map((match) => [match[1], `x_${'0'.repeat(27)}`]),
      );
      for (const method of missing) {
        const response = await t.api(method, fill(path, params));
        const label = `${method} ${path}: ${response.text}`;
        expect({ status: response.status, code: response.body?.error_code }, label).toEqual({
          status: 405,
          code: 'ERR_EDGEWARD_402',
        });
        const allow = (response.headers.get('allow') ?? '').split(',').map((method) => method.trim());
        expect(allow.sort(), label).toEqual(allowed);
      }
    });
  }
});
