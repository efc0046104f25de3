import type { CreateOptions } from '../../../client/collection.js';
import type { EdgewardClient } from '../../../client/index.js';
import type {
  HttpsEdgeRoute,
  HttpsEdgeRouteCreate,
  HttpsEdgeRouteUpdate,
} from '../../../schemas/https-edge-routes.js';
import type { HttpsEdgeRouteSpec, HttpsEdgeRouteStatus } from '../../crds/definitions/https-edge-route.js';
import type { InformerReader } from '../../runtime/informer.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import { sameJson } from '../../runtime/same-json.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { changedFields } from '../shared/changed-fields.js';
import { keptBackend } from '../shared/edges/kept-backend.js';
import type { ResolvedEdge } from '../shared/edges/references.js';
import { type ReferencedObject, resolveReadyId, resolveReadyIds } from '../shared/ready-references.js';
import {
  readSecretValues,
  type SecretObject,
  type SecretValues,
  secretsChanged,
  versionKey,
} from '../shared/secret-values.js';
import { MODULE_OF_SPEC_FIELD, ROUTE_MODULES } from './route-module-adapters.js';
import { type RouteDesiredContext, routeSecretRequests, samlStatusOf } from './route-modules.js';

export type HttpsEdgeRouteObject = ManagedObject & {
  spec: HttpsEdgeRouteSpec;
  status?: HttpsEdgeRouteStatus;
};

/** The route with the tunnel-group backend the operator keeps for `backend.labels` (if any). */
export type RemoteRoute = HttpsEdgeRoute & { keptBackendId?: string };

/** What a route's desired state needs: its edge's server id, referenced IP policies, Secret values. */
export interface ResolvedRoute {
  edgeId: string;
  references: ResolvedEdge;
  secrets: SecretValues;
}

/** The routes collection of an edge, with bodies built from the spec. */
export interface RouteApi {
  get(edgeId: string, id: string): Promise<HttpsEdgeRoute>;
  create(edgeId: string, body: Record<string, unknown>, options: CreateOptions): Promise<HttpsEdgeRoute>;
  update(edgeId: string, id: string, patch: Record<string, unknown>): Promise<HttpsEdgeRoute>;
  deleteModule(edgeId: string, id: string, name: string): Promise<void>;
  delete(edgeId: string, id: string): Promise<void>;
}

/**
 * The client's routes as a `RouteApi`. The casts are where bodies built from the CRD spec (whose
 * zod schema mirrors the API's) meet the client's typed inputs; the server validates them.
 */
export function routeApiOf(routes: EdgewardClient['httpsEdgeRoutes']): RouteApi {
  return {
    get: (edgeId, id) => routes.get(edgeId, id),
    create: (edgeId, body, options) => routes.create(edgeId, body as HttpsEdgeRouteCreate, options),
    update: (edgeId, id, patch) => routes.update(edgeId, id, patch as HttpsEdgeRouteUpdate),
    deleteModule: (edgeId, id, name) =>
      routes.deleteModule(edgeId, id, name as Parameters<typeof routes.deleteModule>[2]),
    delete: (edgeId, id) => routes.delete(edgeId, id),
  };
}

/** The names of the modules whose Secrets are now another version than the one last sent. */
export function modulesWithChangedSecrets(
  sent: Record<string, string> | undefined,
  secrets: SecretValues,
  spec: HttpsEdgeRouteSpec,
): Set<string> {
  const changed = new Set<string>();
  for (const { field, ref } of routeSecretRequests(spec)) {
    const version = secrets.versions[versionKey(ref)];
    if (version === undefined) continue;
    if (!secretsChanged(sent, { values: secrets.values, versions: { [versionKey(ref)]: version } })) continue;
    // A Secret-valued spec path names its module's field: `spec.oauth.provider...` -> oauth.
    const module = MODULE_OF_SPEC_FIELD[field.split('.')[1] ?? ''];
    if (module) changed.add(module);
  }
  return changed;
}

export interface RouteSyncDependencies {
  api: EdgewardClient;
  routes: RouteApi;
  edges: InformerReader<ReferencedObject>;
  ipPolicies: InformerReader<ReferencedObject>;
  secrets: KubeResources<SecretObject>;
}

/**
 * HTTPSEdgeRoute -> `/edges/https/{edge_id}/routes`. Waits for its HTTPSEdge and IP policies to be
 * Ready and for its Secrets; keeps a tunnel-group backend for `backend.labels` as edges do; sends
 * changed top-level fields and modules in one PATCH and deletes dropped modules; sends a module
 * with a Secret again when that Secret changed (the server never reads secrets back).
 *
 * A route lives on one edge: status.edgeId is the edge it was made on. When the HTTPSEdge gets a
 * new server id (recreated there), the old route went with the old edge (404: recreated on the new
 * one) or, if the old edge still exists, the route is replaced by one on the new edge.
 */
export function httpsEdgeRouteSync(
  deps: RouteSyncDependencies,
): ResourceSync<HttpsEdgeRouteObject, ResolvedRoute, RemoteRoute> {
  const { routes, edges, ipPolicies, secrets } = deps;
  const backends = keptBackend(deps.api);

  /** The id of the edge the spec names now, if known (spec.edgeId, or the Ready HTTPSEdge's id). */
  function namedEdgeId(object: HttpsEdgeRouteObject): string | undefined {
    if (object.spec.edgeId) return object.spec.edgeId;
    const ref = object.spec.edgeRef;
    return ref ? edges.cache.get(object.metadata?.namespace, ref.name)?.status?.id : undefined;
  }

  /** The edge the route `object` was made on (for reads and deletes of that route). */
  function edgeOfRoute(object: HttpsEdgeRouteObject): string {
    const edgeId = object.status?.edgeId ?? namedEdgeId(object);
    if (!edgeId) {
      throw new Error(
        `HTTPSEdgeRoute ${object.metadata?.namespace}/${object.metadata?.name}: no edge id known`,
      );
    }
    return edgeId;
  }

  function desiredModules(object: HttpsEdgeRouteObject, context: RouteDesiredContext) {
    const desired: Record<string, unknown> = {};
    for (const [name, { adapter, specOf }] of Object.entries(ROUTE_MODULES)) {
      desired[name] = adapter.desired(specOf(object.spec), context);
    }
    return desired;
  }

  const contextOf = (resolved: ResolvedRoute, backendId: string | undefined): RouteDesiredContext => ({
    resolved: resolved.references,
    backendId,
    secrets: resolved.secrets,
  });

  const topLevel = (spec: HttpsEdgeRouteSpec) => ({
    description: spec.description ?? '',
    metadata: spec.metadata ?? '',
    match_type: spec.matchType,
    match: spec.match,
  });

  return {
    async resolve(object) {
      const namespace = object.metadata?.namespace;
      const { spec } = object;
      let edgeId = spec.edgeId;
      if (!edgeId && spec.edgeRef) {
        const edge = resolveReadyId(edges, namespace, spec.edgeRef, 'spec.edgeRef', 'HTTPSEdge');
        if (!edge.ready) return edge;
        edgeId = edge.value;
      }
      if (!edgeId) {
        return { ready: false, reason: 'InvalidSpec', message: 'spec: one of edgeRef or edgeId is required' };
      }
      const policies = resolveReadyIds(
        ipPolicies,
        namespace,
        spec.ipRestriction?.ipPolicyRefs,
        'spec.ipRestriction.ipPolicyRefs',
        'IPPolicy',
      );
      if (!policies.ready) return policies;
      const values = await readSecretValues(secrets, namespace, routeSecretRequests(spec));
      if (!values.ready) return values;
      return {
        ready: true,
        value: {
          edgeId,
          references: { ipPolicyIds: policies.value, certificateAuthorityIds: undefined },
          secrets: values.value,
        },
      };
    },

    get: (id, object) => routes.get(edgeOfRoute(object), id),

    async create(object, resolved, options) {
      const backendId = await backends.ensure(object, `${options.idempotencyKey}-backend`);
      const configured = Object.entries(desiredModules(object, contextOf(resolved, backendId))).filter(
        ([, value]) => value !== undefined,
      );
      const body = { ...topLevel(object.spec), ...Object.fromEntries(configured) };
      const kept = backends.keptId(object, backendId);
      const route = await backends.remembering(object, kept, () =>
        routes.create(resolved.edgeId, body, options),
      );
      // Recreating: a backend kept for the gone route that the spec no longer uses goes too.
      await backends.drop(object, kept);
      return { ...route, keptBackendId: kept };
    },

    async update(object, resolved, remote) {
      const key = `${object.metadata?.uid}-${object.metadata?.generation}-backend`;
      const backendId = await backends.ensure(object, key);
      const desired = desiredModules(object, contextOf(resolved, backendId));
      const resend = modulesWithChangedSecrets(object.status?.secretVersions, resolved.secrets, object.spec);
      const patch: Record<string, unknown> = changedFields(topLevel(object.spec), {
        description: remote.description,
        metadata: remote.metadata,
        match_type: remote.match_type,
        match: remote.match,
      });
      const dropped: string[] = [];
      for (const [name, { adapter }] of Object.entries(ROUTE_MODULES)) {
        const want = desired[name];
        const have = adapter.current((remote as unknown as Record<string, unknown>)[name], want);
        if (want === undefined) {
          if (have !== undefined) dropped.push(name);
        } else if (resend.has(name) || !sameJson(want, have)) {
          patch[name] = want;
        }
      }
      const kept = backends.keptId(object, backendId);
      const route = await backends.remembering(object, kept, async () => {
        let written: HttpsEdgeRoute = remote;
        if (Object.keys(patch).length > 0) written = await routes.update(remote.edge_id, remote.id, patch);
        for (const name of dropped) await routes.deleteModule(remote.edge_id, remote.id, name);
        if (dropped.length > 0) written = await routes.get(remote.edge_id, remote.id);
        return written;
      });
      await backends.drop(object, kept);
      const changed = Object.keys(patch).length > 0 || dropped.length > 0;
      return { remote: { ...route, keptBackendId: kept }, changed };
    },

    delete: (id, object) => routes.delete(edgeOfRoute(object), id),
    deleteKept: (object) => backends.drop(object, undefined),

    needsReplacement: (_object, resolved, remote) =>
      remote.edge_id === resolved.edgeId
        ? undefined
        : `the route's edge is now ${resolved.edgeId}, not ${remote.edge_id}`,

    statusFields: (_object, remote, resolved) => ({
      edgeId: remote.edge_id,
      backendId: remote.keptBackendId,
      secretVersions: resolved.secrets.versions,
      saml: samlStatusOf(remote.saml),
    }),
  };
}
