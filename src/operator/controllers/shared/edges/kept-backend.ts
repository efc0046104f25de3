import { EdgewardApiError } from '../../../../client/errors.js';
import type { EdgewardClient } from '../../../../client/index.js';
import { sameJson } from '../../../runtime/same-json.js';
import type { ManagedObject } from '../../managed/managed-resource.js';
import { SyncProgressError } from '../../managed/sync-errors.js';
import { isEdgewardNotFound } from '../edgeward-errors.js';

/** An edge (or route) object whose spec may name a backend by id or by tunnel-group labels. */
export type BackendOwner = ManagedObject & {
  spec: { backend?: { backendId?: string; labels?: Record<string, string> } };
  status?: { backendId?: string };
};

/**
 * The tunnel-group backend an edge keeps for `backend.labels`: created with an Idempotency-Key,
 * relabelled in place, recorded in status.backendId, deleted with the edge or when the spec stops
 * using labels.
 */
export function keptBackend(api: EdgewardClient) {
  /** The backend id the edge should point at, creating or relabelling the kept backend. */
  async function ensure(object: BackendOwner, idempotencyKey: string): Promise<string | undefined> {
    const backend = object.spec.backend;
    if (!backend) return undefined;
    if (backend.backendId) return backend.backendId;
    const labels = backend.labels ?? {};
    const kept = object.status?.backendId;
    if (kept) {
      try {
        const current = await api.tunnelGroupBackends.get(kept);
        if (!sameJson(current.labels, labels)) await api.tunnelGroupBackends.update(kept, { labels });
        return kept;
      } catch (error) {
        if (!isEdgewardNotFound(error)) throw error;
      }
    }
    const description = `${object.kind} ${object.metadata?.namespace}/${object.metadata?.name}`;
    // Recreating one deleted on the server must not replay the create that made the gone one.
    const key = kept ? `${idempotencyKey}-replaces-${kept}` : idempotencyKey;
    try {
      const created = await api.tunnelGroupBackends.create({ description, labels }, { idempotencyKey: key });
      return created.id;
    } catch (error) {
      // Made under this key before with other labels (its answer lost, then a restart and a new
      // spec): that backend is this edge's, never recorded; it is relabelled and kept.
      const made = error instanceof EdgewardApiError ? error.madeByKeyBefore : undefined;
      if (!made) throw error;
      await api.tunnelGroupBackends.update(made, { labels });
      return made;
    }
  }

  /** Deletes the kept backend unless it is `keep` (still in use). */
  async function drop(object: BackendOwner, keep: string | undefined): Promise<void> {
    const kept = object.status?.backendId;
    if (!kept || kept === keep) return;
    try {
      await api.tunnelGroupBackends.delete(kept);
    } catch (error) {
      if (!isEdgewardNotFound(error)) throw error;
    }
  }

  /** The id to record as kept: only a backend made for labels is ours. */
  const keptId = (object: BackendOwner, backendId: string | undefined) =>
    object.spec.backend?.labels ? backendId : undefined;

  /**
   * Runs the edge write after `ensure`; if it fails, a backend made just now is recorded in status
   * with the failure, so the retry relabels that one instead of making another, and deleting the
   * CR deletes it.
   */
  async function remembering<V>(object: BackendOwner, kept: string | undefined, write: () => Promise<V>) {
    try {
      return await write();
    } catch (error) {
      if (kept && kept !== object.status?.backendId) throw new SyncProgressError({ backendId: kept }, error);
      throw error;
    }
  }

  return { ensure, drop, keptId, remembering };
}
