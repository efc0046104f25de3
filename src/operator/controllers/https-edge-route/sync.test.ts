import { describe, expect, it } from 'vitest';
import { fakeEdgewardClient } from '../../../../test/support/fake/edgeward-client.js';
import { FakeInformer } from '../../../../test/support/fake/informer.js';
import { FakeResourceClient } from '../../../../test/support/fake/resource-client.js';
import type { HttpsEdgeRoute } from '../../../schemas/https-edge-routes.js';
import { type ModuleKind, storedModule } from '../../../server/edge-resources/module-kinds.js';
import { HTTPS_EDGE_ROUTE_MODULES } from '../../../server/edge-resources/route-module-kinds.js';
import type { RequestContext } from '../../../server/http/context.js';
import type { HttpsEdgeRouteSpec } from '../../crds/definitions/https-edge-route.js';
import { SECRET } from '../../runtime/resource-types.js';
import type { Resolution } from '../managed/managed-resource.js';
import type { ReferencedObject } from '../shared/ready-references.js';
import type { SecretObject } from '../shared/secret-values.js';
import {
  type HttpsEdgeRouteObject,
  httpsEdgeRouteSync,
  type RemoteRoute,
  type ResolvedRoute,
  type RouteApi,
} from './sync.js';

/**
 * The route sync against a fake routes API whose read forms come from the server's own module
 * code (validation with defaults, sealing, `toWire`): what the operator writes must read back as
 * "no difference", or every resync would write again.
 */

const KINDS = new Map<string, ModuleKind>(HTTPS_EDGE_ROUTE_MODULES.map((kind) => [kind.name, kind]));
const ROUTE_ID = 'edghtsrt_1';
const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

const fakeContext = {
  url: (path: string) => `https://api.test${path}`,
  secretBox: { seal: (_secret: string, context: string) => `sealed(${context})` },
} as unknown as RequestContext;

/** A SAML key pair already made for the route, so `toStored` does not generate one. */
const samlKept = {
  service_provider: {
    route_id: ROUTE_ID,
    request_signing_certificate_pem: 'PEM',
    request_signing_key_sealed: 'k',
  },
};

type Call = { method: string; edgeId: string; body?: unknown; name?: string };

/** Routes kept as the server keeps them: stored modules, read forms through the server's code. */
class FakeRoutes implements RouteApi {
  calls: Call[] = [];
  stored = new Map<
    string,
    { edgeId: string; top: Record<string, unknown>; modules: Record<string, unknown> }
  >();

  async #store(id: string, edgeId: string, body: Record<string, unknown>) {
    const current = this.stored.get(id) ?? { edgeId, top: {}, modules: {} };
    for (const [name, value] of Object.entries(body)) {
      const kind = KINDS.get(name);
      if (!kind) {
        current.top[name] = value;
        continue;
      }
      const parsed = kind.input.parse(value);
      current.modules[name] = await storedModule(kind, parsed, fakeContext, {
        table: 'https_edge_routes',
        id,
        previous: name === 'saml' ? samlKept : undefined,
      });
    }
    this.stored.set(id, current);
  }

  #read(id: string): HttpsEdgeRoute {
    const route = this.stored.get(id);
    if (!route) throw Object.assign(new Error('not found'), { statusCode: 404 });
    const modules = Object.fromEntries(
      HTTPS_EDGE_ROUTE_MODULES.map((kind) => {
        const stored = route.modules[kind.name];
        return [kind.name, stored === undefined ? null : kind.toWire(stored, fakeContext, {})];
      }),
    );
    return {
      edge_id: route.edgeId,
      id,
      uri: `https://api.test/edges/https/${route.edgeId}/routes/${id}`,
      created_at: '2026-01-01T00:00:00Z',
      description: '',
      metadata: '',
      ...route.top,
      ...modules,
    } as HttpsEdgeRoute;
  }

  async get(_edgeId: string, id: string) {
    return this.#read(id);
  }
  async create(edgeId: string, body: Record<string, unknown>) {
    this.calls.push({ method: 'POST', edgeId, body });
    await this.#store(ROUTE_ID, edgeId, body);
    return this.#read(ROUTE_ID);
  }
  async update(edgeId: string, id: string, patch: Record<string, unknown>) {
    this.calls.push({ method: 'PATCH', edgeId, body: patch });
    await this.#store(id, edgeId, patch);
    return this.#read(id);
  }
  async deleteModule(edgeId: string, id: string, name: string) {
    this.calls.push({ method: 'DELETE', edgeId, name });
    delete this.stored.get(id)?.modules[name];
  }
  async delete(edgeId: string, id: string) {
    this.calls.push({ method: 'DELETE', edgeId });
    this.stored.delete(id);
  }
}

/** A Ready object of the route's namespace with server id `id`. */
const readyObject = (name: string, id: string): ReferencedObject => ({
  metadata: { name, namespace: 'ns' },
  status: {
    id,
    conditions: [{ type: 'Ready', status: 'True', reason: 'Created', message: '', lastTransitionTime: '' }],
  },
});

type SecretSpec = { version: string; data: Record<string, string> };

/** A Secret of the route's namespace at resourceVersion `version`, holding `data` (plain text). */
function secretObject(name: string, { version, data }: SecretSpec): SecretObject {
  const encoded = Object.fromEntries(Object.entries(data).map(([key, value]) => [key, base64(value)]));
  return { metadata: { name, namespace: 'ns', resourceVersion: version }, data: encoded };
}

function setup(secretSpecs: Record<string, SecretSpec> = {}) {
  const routes = new FakeRoutes();
  const edges = new FakeInformer<ReferencedObject>([readyObject('web', 'edghts_1')]);
  const policies = new FakeInformer<ReferencedObject>();
  const secrets = new FakeResourceClient<SecretObject>(
    SECRET,
    Object.entries(secretSpecs).map(([name, spec]) => secretObject(name, spec)),
  );
  const sync = httpsEdgeRouteSync({
    api: fakeEdgewardClient(),
    routes,
    edges,
    ipPolicies: policies,
    secrets,
  });
  return { routes, edges, policies, secrets, sync };
}

function route(
  spec: Partial<HttpsEdgeRouteSpec>,
  status?: HttpsEdgeRouteObject['status'],
): HttpsEdgeRouteObject {
  return {
    metadata: { name: 'api', namespace: 'ns', uid: 'uid-1', generation: 1 },
    spec: { edgeRef: { name: 'web' }, matchType: 'path_prefix', match: '/api', ...spec },
    status,
  } as HttpsEdgeRouteObject;
}

function expectReady(resolution: Resolution<ResolvedRoute>): ResolvedRoute {
  if (!resolution.ready) throw new Error(`not ready: ${resolution.reason}: ${resolution.message}`);
  return resolution.value;
}

const SAML_METADATA = '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"/>';

/** Every route-only module, plus policy, with nothing but what they require. */
const minimalModules: Partial<HttpsEdgeRouteSpec> = {
  circuitBreaker: { enabled: true },
  compression: { enabled: true },
  requestHeaders: { enabled: true },
  responseHeaders: { enabled: true },
  webhookVerification: { enabled: true, provider: 'sns' },
  oauth: { enabled: true, provider: { google: {} } },
  saml: { enabled: true, idpMetadata: SAML_METADATA },
  oidc: {
    enabled: true,
    issuer: 'https://id.example.com',
    clientId: 'c',
    clientSecretRef: { name: 'oidc', key: 'secret' },
  },
  websocketTcpConverter: { enabled: true },
  userAgentFilter: { enabled: true },
  policy: { enabled: true },
};

/** Every route-only module with every setting given. */
const fullModules: Partial<HttpsEdgeRouteSpec> = {
  backend: { enabled: true, backendId: 'bkdtg_1' },
  circuitBreaker: {
    enabled: false,
    trippedDuration: 5,
    rollingWindow: 60,
    numBuckets: 12,
    volumeThreshold: 3,
    errorThresholdPercentage: 0.25,
  },
  compression: { enabled: false },
  requestHeaders: { enabled: true, add: { 'X-Env': 'prod' }, remove: ['Cookie'] },
  responseHeaders: { enabled: true, add: { 'X-Served-By': 'edgeward' }, remove: ['Server'] },
  webhookVerification: { enabled: true, provider: 'github', secretRef: { name: 'hook', key: 'secret' } },
  oauth: {
    enabled: true,
    optionsPassthrough: true,
    cookiePrefix: 'acme.',
    inactivityTimeout: 60,
    maximumDuration: 600,
    authCheckInterval: 30,
    provider: {
      github: {
        clientId: 'gh-app',
        clientSecretRef: { name: 'gh', key: 'secret' },
        scopes: ['read:org'],
        emailAddresses: ['a@example.com'],
        emailDomains: ['example.com'],
        teams: ['acme/platform'],
        organizations: ['acme'],
      },
    },
  },
  saml: {
    enabled: true,
    idpMetadata: SAML_METADATA,
    forceAuthn: true,
    allowIdpInitiated: true,
    authorizedGroups: ['admins'],
    nameidFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
    cookiePrefix: 'sso.',
  },
  oidc: {
    enabled: true,
    issuer: 'https://id.example.com/realm',
    clientId: 'c',
    clientSecretRef: { name: 'oidc', key: 'secret' },
    scopes: ['email'],
    maximumDuration: 100,
  },
  websocketTcpConverter: { enabled: false },
  userAgentFilter: { enabled: true, allow: ['^curl/'], deny: ['bot'] },
  policy: {
    enabled: true,
    inbound: [{ name: 'deny', expressions: ['true'], actions: [{ type: 'deny' }] }],
    outbound: [{ name: 'log', actions: [{ type: 'log', config: { level: 'info' } }] }],
  },
};

const allSecrets = {
  oidc: { version: '1', data: { secret: 'oidc-secret' } },
  hook: { version: '1', data: { secret: 'hook-secret' } },
  gh: { version: '1', data: { secret: 'gh-secret' } },
};

async function createThenResync(spec: Partial<HttpsEdgeRouteSpec>) {
  const world = setup(allSecrets);
  const object = route(spec);
  const resolved = expectReady(await world.sync.resolve(object, {} as never));
  const created = await world.sync.create(object, resolved, { idempotencyKey: 'k' });
  const status = world.sync.statusFields?.(object, created, resolved);
  const synced = route(spec, { id: created.id, ...status });
  const remote = await world.sync.get(created.id, synced);
  const result = await world.sync.update(synced, resolved, remote);
  return { world, created, status, result };
}

describe('HTTPSEdgeRoute sync', () => {
  it.each([
    ['with only what they require', minimalModules],
    ['with every setting', fullModules],
  ])('finds no difference after creating every module %s', async (_what, modules) => {
    const { world, created, result } = await createThenResync(modules);
    expect(world.routes.calls.map((call) => call.method)).toEqual(['POST']);
    expect(Object.keys(world.routes.calls[0]?.body as object).sort()).toEqual(
      ['description', 'metadata', 'match_type', 'match', ...Object.keys(modules).map(toApiName)].sort(),
    );
    expect(created.edge_id).toBe('edghts_1');
    expect(result.changed).toBe(false);
  });

  it('records the edge, the Secret versions and the SAML service-provider fields in status', async () => {
    const { status } = await createThenResync(fullModules);
    expect(status).toEqual({
      edgeId: 'edghts_1',
      backendId: undefined,
      secretVersions: { 'hook/secret': '1', 'gh/secret': '1', 'oidc/secret': '1' },
      saml: {
        entityId: `https://api.test/saml/${ROUTE_ID}/metadata`,
        assertionConsumerServiceUrl: `https://api.test/saml/${ROUTE_ID}/acs`,
        singleLogoutUrl: `https://api.test/saml/${ROUTE_ID}/slo`,
        metadataUrl: `https://api.test/saml/${ROUTE_ID}/metadata`,
        requestSigningCertificatePem: 'PEM',
      },
    });
    expect(JSON.stringify(status)).not.toMatch(/hook-secret|gh-secret|oidc-secret/);
  });

  it('sends changed fields and modules in one PATCH and deletes a dropped module', async () => {
    const { world, created, status } = await createThenResync(fullModules);
    world.routes.calls = [];
    const { compression: _dropped, ...kept } = fullModules;
    const spec = {
      ...kept,
      description: 'api',
      requestHeaders: { enabled: true, add: { 'X-Env': 'staging' } },
    };
    const object = route(spec, { id: created.id, ...status });
    const resolved = expectReady(await world.sync.resolve(object, {} as never));
    const result = await world.sync.update(object, resolved, await world.sync.get(created.id, object));
    expect(result.changed).toBe(true);
    expect(world.routes.calls).toEqual([
      {
        method: 'PATCH',
        edgeId: 'edghts_1',
        body: {
          description: 'api',
          request_headers: { enabled: true, add: { 'X-Env': 'staging' }, remove: [] },
        },
      },
      { method: 'DELETE', edgeId: 'edghts_1', name: 'compression' },
    ]);
    expect(result.remote.compression).toBeNull();
  });

  it('sends a module again when its Secret changed, and only that module', async () => {
    const { world, created, status } = await createThenResync(fullModules);
    world.routes.calls = [];
    world.secrets.put(secretObject('gh', { version: '2', data: { secret: 'gh-secret-2' } }));
    const object = route(fullModules, { id: created.id, ...status });
    const resolved = expectReady(await world.sync.resolve(object, {} as never));
    const result = await world.sync.update(object, resolved, await world.sync.get(created.id, object));
    expect(result.changed).toBe(true);
    expect(world.routes.calls.map((call) => [call.method, Object.keys(call.body as object)])).toEqual([
      ['PATCH', ['oauth']],
    ]);
    const sent = world.routes.calls[0]?.body as
      | { oauth: { provider: { github: { client_secret: string } } } }
      | undefined;
    expect(sent?.oauth.provider.github.client_secret).toBe('gh-secret-2');
    expect(world.sync.statusFields?.(object, result.remote, resolved)).toMatchObject({
      secretVersions: { 'hook/secret': '1', 'gh/secret': '2', 'oidc/secret': '1' },
    });
  });

  it('waits for the edge, the IP policies and the Secrets before anything is written', async () => {
    const world = setup();
    const policyRoute = route({ ipRestriction: { enabled: true, ipPolicyRefs: [{ name: 'office' }] } });
    world.edges.remove('ns', 'web');
    expect(await world.sync.resolve(policyRoute, {} as never)).toMatchObject({
      ready: false,
      reason: 'ReferenceNotReady',
      message: 'spec.edgeRef: HTTPSEdge web is not Ready',
    });
    world.edges.put(readyObject('web', 'edghts_1'));
    expect(await world.sync.resolve(policyRoute, {} as never)).toMatchObject({
      ready: false,
      reason: 'ReferenceNotReady',
      message: 'spec.ipRestriction.ipPolicyRefs: IPPolicy office is not Ready',
    });
    world.policies.put(readyObject('office', 'ipp_1'));
    const resolved = expectReady(await world.sync.resolve(policyRoute, {} as never));
    expect(resolved).toMatchObject({ edgeId: 'edghts_1', references: { ipPolicyIds: ['ipp_1'] } });

    const withSecret = route({ oidc: minimalModules.oidc });
    expect(await world.sync.resolve(withSecret, {} as never)).toMatchObject({
      ready: false,
      reason: 'SecretNotFound',
    });
    expect(world.routes.calls).toEqual([]);
  });

  it('uses spec.edgeId as is, and replaces a route left on an edge that is no longer the one named', async () => {
    const world = setup();
    const byId = route({ edgeRef: undefined, edgeId: 'edghts_9' });
    expect(expectReady(await world.sync.resolve(byId, {} as never)).edgeId).toBe('edghts_9');

    const object = route({}, { id: ROUTE_ID, edgeId: 'edghts_1' });
    const resolved = expectReady(await world.sync.resolve(object, {} as never));
    const remote = { edge_id: 'edghts_1' } as RemoteRoute;
    expect(world.sync.needsReplacement?.(object, resolved, remote)).toBeUndefined();
    world.edges.put(readyObject('web', 'edghts_2'));
    const moved = expectReady(await world.sync.resolve(object, {} as never));
    expect(world.sync.needsReplacement?.(object, moved, remote)).toMatch(/edghts_2/);
    // Reads and deletes address the route where it was made.
    await world.sync.delete(ROUTE_ID, object);
    expect(world.routes.calls).toEqual([{ method: 'DELETE', edgeId: 'edghts_1' }]);
  });
});

function toApiName(specName: string): string {
  return specName.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
