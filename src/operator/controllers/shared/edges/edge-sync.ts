import type { CreateOptions } from '../../../../client/collection.js';
import type { EdgewardClient } from '../../../../client/index.js';
import { sameJson } from '../../../runtime/same-json.js';
import type { ManagedObject, RemoteResource, ResourceSync } from '../../managed/managed-resource.js';
import { changedFields } from '../changed-fields.js';
import { describedFields } from '../described-fields.js';
import type { ModuleAdapter } from './edge-modules.js';
import { type BackendOwner, keptBackend } from './kept-backend.js';
import {
  type EdgeReferenceInformers,
  type EdgeReferencingSpec,
  type ResolvedEdge,
  resolveEdgeReferences,
} from './references.js';

/** What every edge read form has besides its modules. */
export interface EdgeRead extends RemoteResource {
  description: string;
  metadata: string;
  hostports: string[];
}

/** The edge collection of the client, as the generic sync uses it (bodies built from the spec). */
export interface EdgeApi<E extends EdgeRead> {
  get(id: string): Promise<E>;
  create(body: Record<string, unknown>, options: CreateOptions): Promise<E>;
  update(id: string, patch: Record<string, unknown>): Promise<E>;
  deleteModule(id: string, name: string): Promise<void>;
  delete(id: string): Promise<void>;
}

/**
 * A typed client edge collection as an `EdgeApi`. The casts are the one place where the bodies
 * (built from the CRD spec, whose zod schema mirrors the API's) meet the client's typed inputs;
 * the server validates them as it validates any request.
 */
export function edgeApiOf<E extends EdgeRead, C, U, N extends string>(collection: {
  get(id: string): Promise<E>;
  create(body: C, options?: CreateOptions): Promise<E>;
  update(id: string, patch: U): Promise<E>;
  deleteModule(id: string, name: N): Promise<void>;
  delete(id: string): Promise<void>;
}): EdgeApi<E> {
  return {
    get: (id) => collection.get(id),
    create: (body, options) => collection.create(body as C, options),
    update: (id, patch) => collection.update(id, patch as U),
    deleteModule: (id, name) => collection.deleteModule(id, name as N),
    delete: (id) => collection.delete(id),
  };
}

export type EdgeObject = ManagedObject &
  BackendOwner & {
    spec: EdgeReferencingSpec & { description?: string; metadata?: string; hostports?: string[] };
  };

/** The edge with the tunnel-group backend the operator keeps for `backend.labels` (if any). */
export type RemoteEdge<E extends EdgeRead> = E & { keptBackendId?: string };

export interface EdgeDefinition<T extends EdgeObject, E extends EdgeRead> {
  edges: EdgeApi<E>;
  /**
   * API module name -> its adapter and the spec field it comes from. (Adapters of different
   * modules fit `ModuleAdapter<unknown, unknown>` because method parameters are bivariant.)
   */
  modules: Record<string, { adapter: ModuleAdapter<unknown, unknown>; specOf: (object: T) => unknown }>;
  references: EdgeReferenceInformers;
}

/**
 * The sync of TLS, TCP and HTTPS edges: references wait until Ready; `backend.labels` makes the
 * operator keep a tunnel-group backend; changed top-level fields and modules go in one PATCH; a
 * module the spec drops is deleted (an update cannot unset one).
 */
export function edgeSync<T extends EdgeObject, E extends EdgeRead>(
  api: EdgewardClient,
  definition: EdgeDefinition<T, E>,
): ResourceSync<T, ResolvedEdge, RemoteEdge<E>> {
  const { edges, modules, references } = definition;
  const backends = keptBackend(api);

  function desiredModules(object: T, resolved: ResolvedEdge, backendId: string | undefined) {
    const desired: Record<string, unknown> = {};
    for (const [name, { adapter, specOf }] of Object.entries(modules)) {
      desired[name] = adapter.desired(specOf(object), { resolved, backendId });
    }
    return desired;
  }

  const topLevel = (object: T) => ({
    ...describedFields(object.spec),
    hostports: object.spec.hostports ?? [],
  });

  return {
    resolve: async (object) => resolveEdgeReferences(references, object.metadata?.namespace, object.spec),
    get: (id) => edges.get(id),
    async create(object, resolved, options) {
      const backendId = await backends.ensure(object, `${options.idempotencyKey}-backend`);
      const configured = Object.entries(desiredModules(object, resolved, backendId)).filter(
        ([, value]) => value !== undefined,
      );
      const body = { ...topLevel(object), ...Object.fromEntries(configured) };
      const kept = backends.keptId(object, backendId);
      const edge = await backends.remembering(object, kept, () => edges.create(body, options));
      // Recreating: a backend kept for the gone edge that the spec no longer uses goes too (a
      // failure here is retried, and the create replays by its key).
      await backends.drop(object, kept);
      return { ...edge, keptBackendId: kept };
    },
    async update(object, resolved, remote) {
      const key = `${object.metadata?.uid}-${object.metadata?.generation}-backend`;
      const backendId = await backends.ensure(object, key);
      const desired = desiredModules(object, resolved, backendId);
      const patch: Record<string, unknown> = changedFields(topLevel(object), {
        description: remote.description,
        metadata: remote.metadata,
        hostports: remote.hostports,
      });
      const dropped: string[] = [];
      for (const [name, { adapter }] of Object.entries(modules)) {
        const want = desired[name];
        const read = (remote as unknown as Record<string, unknown>)[name];
        const have = adapter.current(read, want);
        if (want === undefined) {
          if (have !== undefined) dropped.push(name);
        } else if (!sameJson(want, have)) {
          patch[name] = want;
        }
      }
      const kept = backends.keptId(object, backendId);
      const edge = await backends.remembering(object, kept, async () => {
        let written = remote as E;
        if (Object.keys(patch).length > 0) written = await edges.update(remote.id, patch);
        for (const name of dropped) await edges.deleteModule(remote.id, name);
        if (dropped.length > 0) written = await edges.get(remote.id);
        return written;
      });
      await backends.drop(object, kept);
      const changed = Object.keys(patch).length > 0 || dropped.length > 0;
      return { remote: { ...edge, keptBackendId: kept }, changed };
    },
    delete: (id) => edges.delete(id),
    deleteKept: (object) => backends.drop(object, undefined),
    statusFields: (_object, remote) => ({ hostports: remote.hostports, backendId: remote.keptBackendId }),
  };
}
