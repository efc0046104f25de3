import type { KubernetesObject } from '@kubernetes/client-node';
import type { Condition, ConditionUpdate } from '../../runtime/conditions.js';
import type { ReconcileContext } from '../../runtime/controller.js';

/**
 * What a managed kind supplies to the reconcile skeleton every edgeward controller shares (the
 * shape of cert-manager's and Crossplane's managed resources; see reconcile.ts): how to resolve its
 * references, read, create, update and delete its server resource, and its own status fields.
 * Failures a sync may throw besides API errors are in sync-errors.ts.
 */

export const PAUSED_ANNOTATION = 'edgeward.dev/paused';
export const ADOPT_ANNOTATION = 'edgeward.dev/adopt-id';

export interface ManagedStatus {
  id?: string;
  uri?: string;
  observedGeneration?: number;
  conditions?: Condition[];
  [field: string]: unknown;
}

export type ManagedObject = KubernetesObject & {
  spec: { deletionPolicy?: 'Delete' | 'Orphan' };
  status?: ManagedStatus;
};

export interface RemoteResource {
  id: string;
  uri: string;
}

/**
 * What `resolve` found: the values the desired state needs, or why it cannot be built yet. A
 * reference the controller watches needs no `retryAfterMs`: its becoming Ready enqueues this
 * object (a timer as well would only fire a redundant reconcile once it is Ready); something not
 * watched (a foreign Secret) gives one.
 */
export type Resolution<R> =
  | { ready: true; value: R }
  | { ready: false; reason: string; message: string; retryAfterMs?: number };

/** What `extraConditions` reports: conditions besides Ready and Synced, and when to look again. */
export interface ExtraConditions {
  /** Set with Ready in the same status write; a type not listed keeps what it had. */
  conditions: ConditionUpdate[];
  /** Types taken out of status (a condition that no longer applies, e.g. a feature turned off). */
  removed?: string[];
  /** Reconcile again this soon, before the periodic resync (a state worth watching closely). */
  requeueAfterMs?: number;
}

/**
 * Why a resource is replaced, when the replacement is routine (a certificate renewed in its
 * Secret): announced with a Normal event instead of the Warning a bare reason gets (a lost token).
 */
export interface Replacement {
  because: string;
  routine: true;
}

export interface ResourceSync<T extends ManagedObject, R, Remote extends RemoteResource> {
  /** Resolves references (other CRs, Secrets); not ready -> Ready=False, no API writes. */
  resolve(object: T, context: ReconcileContext): Promise<Resolution<R>>;
  /** Reads the server resource; `object` for kinds whose path needs more than the id (routes). */
  get(id: string, object: T): Promise<Remote>;
  create(object: T, resolved: R, options: { idempotencyKey: string }): Promise<Remote>;
  /**
   * Runs after a create and before the status write (e.g. storing a one-time token). Throwing
   * retries the whole reconcile; the create is then replayed by its Idempotency-Key.
   */
  afterCreate?(object: T, remote: Remote): Promise<void>;
  /** Brings `remote` to the desired state writing only what differs; `changed` false = no writes. */
  update(object: T, resolved: R, remote: Remote): Promise<{ remote: Remote; changed: boolean }>;
  /** Deletes the server resource `id` (only that one); 404 counts as done. */
  delete(id: string, object: T): Promise<void>;
  /**
   * Deletes what the controller keeps besides the resource (recorded in status), when the CR is
   * deleted with deletionPolicy Delete; also runs when no resource was ever created.
   */
  deleteKept?(object: T): Promise<void>;
  /**
   * Why the existing server resource must be replaced by a new one although it matches the spec
   * (e.g. the one-time token it was created with is lost), or undefined. Not asked on adoption.
   * A replacement creates the new resource (Idempotency-Key `<uid>-replaces-<old id>`,
   * the same key a recreate after a remote delete uses, so a crash anywhere in between replays the
   * same new resource), runs `afterCreate`, then deletes the old one, then writes status.
   */
  needsReplacement?(object: T, resolved: R, remote: Remote): string | Replacement | undefined;
  /**
   * Runs before the finalizer goes with deletionPolicy Orphan (the server resource stays): e.g.
   * letting go of a Secret the CR owns, so garbage collection does not take the only token copy.
   */
  orphan?(object: T): Promise<void>;
  /** Kind-specific status fields derived from the server resource. */
  statusFields?(object: T, remote: Remote, resolved: R): Record<string, unknown>;
  /**
   * How the server resource is doing beyond matching the spec (e.g. an event destination's
   * delivery), read after every successful apply. Ready stays about the spec; these conditions
   * only inform. Their messages must be stable (no counts or times), so an unchanged state writes
   * no status. A throw is logged and the conditions keep what they had: the reconcile succeeds.
   */
  extraConditions?(object: T, remote: Remote): Promise<ExtraConditions>;
}
