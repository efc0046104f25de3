import type { KubernetesObject } from '@kubernetes/client-node';
import { EdgewardApiError } from '../../client/errors.js';
import { isNotFound } from '../runtime/api-errors.js';
import { type Condition, ConditionType, getCondition, setCondition } from '../runtime/conditions.js';
import { addFinalizer, hasFinalizer, isBeingDeleted, removeFinalizer } from '../runtime/finalizers.js';
import type { Informer } from '../runtime/informer.js';
import type { ResourceKind } from '../runtime/kinds.js';
import type { Manager, ReconcileContext, ReconcileOutcome, ReconcileRequest } from '../runtime/manager.js';
import type { ResourceClient } from '../runtime/resource-client.js';
import { sameJson } from '../runtime/status-writer.js';

/**
 * The reconcile skeleton every edgeward controller shares (the shape of cert-manager's and
 * Crossplane's managed resources): pause, finalizer, references, adopt/observe/create/update,
 * delete, and one status write per reconcile. A controller supplies only a `ResourceSync`: how to
 * resolve its references, read, create, update and delete its server resource, and the
 * kind-specific status fields.
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

/**
 * A failure the same spec will always meet (e.g. a changed immutable field of an adopted
 * resource): reported as Ready=False with `reason`, not retried until the spec changes.
 */
export class TerminalSyncError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'TerminalSyncError';
  }
}

/**
 * A failure after the sync already made something on the server that status must remember (e.g.
 * a TLSEdge's tunnel-group backend created before the edge create failed): the fields are written
 * with the failure, so the retry reuses it and a delete of the CR cleans it up.
 */
export class SyncProgressError extends Error {
  constructor(
    readonly statusFields: Record<string, unknown>,
    cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'SyncProgressError';
  }
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
   * A replacement creates the new resource (Idempotency-Key `<uid>-<generation>-replaces-<old id>`,
   * the same key a recreate after a remote delete uses, so a crash anywhere in between replays the
   * same new resource), runs `afterCreate`, then deletes the old one, then writes status.
   */
  needsReplacement?(object: T, resolved: R, remote: Remote): string | undefined;
  /**
   * Runs before the finalizer goes with deletionPolicy Orphan (the server resource stays): e.g.
   * letting go of a Secret the CR owns, so garbage collection does not take the only token copy.
   */
  orphan?(object: T): Promise<void>;
  /** Kind-specific status fields derived from the server resource. */
  statusFields?(object: T, remote: Remote, resolved: R): Record<string, unknown>;
}

export interface ManagedController<T extends ManagedObject, R, Remote extends RemoteResource> {
  manager: Manager;
  kind: ResourceKind;
  client: ResourceClient<T>;
  informer: Informer<T>;
  sync: ResourceSync<T, R, Remote>;
}

/** The keys of `desired` whose values differ from `current` (for PATCH bodies of changed fields only). */
export function changedFields<D extends Record<string, unknown>>(
  desired: D,
  current: Record<string, unknown>,
): Partial<D> {
  const changed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(desired)) {
    if (value !== undefined && !sameJson(value, current[key])) changed[key] = value;
  }
  return changed as Partial<D>;
}

export const isApiNotFound = (error: unknown) => error instanceof EdgewardApiError && error.isNotFound;

type Outcome = ReconcileOutcome | undefined;

interface StatusUpdate {
  ready: { status: 'True' | 'False'; reason: string; message: string };
  synced: { status: 'True' | 'False'; reason: string; message: string };
  remote?: RemoteResource;
  fields?: Record<string, unknown>;
  /** Paused: only Synced speaks for this generation; Ready and observedGeneration stay as they were. */
  paused?: boolean;
}

export async function reconcileManaged<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  request: ReconcileRequest,
  context: ReconcileContext,
): Promise<Outcome> {
  const { manager, client, informer, sync } = controller;
  const cached = informer.cache.get(request.namespace, request.name);
  if (!cached) return undefined;
  let object = cached;
  if (!object.status?.id) {
    // A key re-queued by an event during its previous reconcile can run before the cache has that
    // reconcile's status write: without status.id it would create again (or, being deleted, delete
    // nothing on the server). One live read settles it; objects with an id never need it.
    const fresh = await readLive(client, request);
    if (!fresh) return undefined;
    object = fresh;
  }
  const generation = object.metadata?.generation;

  if (object.metadata?.annotations?.[PAUSED_ANNOTATION] === 'true') {
    await writeStatus(controller, object, {
      ready: currentCondition(object, ConditionType.Ready),
      synced: { status: 'False', reason: 'Paused', message: `${PAUSED_ANNOTATION} is "true"` },
      paused: true,
    });
    return undefined;
  }

  if (isBeingDeleted(object)) {
    if (!hasFinalizer(object)) return undefined;
    const id = object.status?.id;
    if ((object.spec.deletionPolicy ?? 'Delete') === 'Orphan') {
      try {
        await sync.orphan?.(object);
      } catch (error) {
        return failed(controller, context, object, error);
      }
    } else {
      try {
        if (id) await deleteIgnoringNotFound(sync, id, object);
        await sync.deleteKept?.(object);
      } catch (error) {
        // In use on the server (a CA an edge still names): not terminal, the user is expected to
        // remove the use, so retry with backoff and say why the CR stays.
        if (error instanceof EdgewardApiError && error.statusCode === 409) {
          await writeStatus(controller, object, {
            ready: { status: 'False', reason: 'DeleteBlocked', message: error.message },
            synced: { status: 'False', reason: 'DeleteBlocked', message: error.message },
          });
          await manager.events.warning(object, 'DeleteBlocked', error.message);
          throw error;
        }
        return failed(controller, context, object, error);
      }
      if (id) await announce(manager, context, object, id, 'Deleted', `deleted ${id} on the server`);
    }
    await removeFinalizer(client, object);
    return undefined;
  }

  // A terminal failure of this very generation is not retried by resyncs: only a new spec can fix it.
  const ready = getCondition(object.status?.conditions, ConditionType.Ready);
  if (
    ready?.status === 'False' &&
    TERMINAL_REASONS.has(ready.reason) &&
    ready.observedGeneration === generation
  ) {
    return undefined;
  }

  // Before any remote create, so a server resource never exists without a finalizer to clean it up.
  object = await addFinalizer(client, object);

  let resolution: Resolution<R>;
  try {
    resolution = await sync.resolve(object, context);
  } catch (error) {
    return failed(controller, context, object, error);
  }
  if (!resolution.ready) {
    await writeStatus(controller, object, {
      ready: { status: 'False', reason: resolution.reason, message: resolution.message },
      synced: { status: 'False', reason: resolution.reason, message: resolution.message },
    });
    return resolution.retryAfterMs === undefined ? undefined : { requeueAfterMs: resolution.retryAfterMs };
  }
  const resolved = resolution.value;

  try {
    // Aborted (leadership lost, shutdown timeout): start no server write another replica may make.
    context.signal.throwIfAborted();
    const statusId = object.status?.id;
    const adoptId = statusId ? undefined : object.metadata?.annotations?.[ADOPT_ANNOTATION];
    const id = statusId ?? adoptId;
    let remote: Remote | undefined;
    if (id) {
      try {
        remote = await sync.get(id, object);
      } catch (error) {
        if (!isApiNotFound(error)) throw error;
        if (adoptId) {
          throw new TerminalSyncError(
            'AdoptTargetNotFound',
            `${ADOPT_ANNOTATION}: ${adoptId} does not exist`,
          );
        }
        context.log.info({ id }, 'server resource gone: recreating it');
      }
    }
    const replaceBecause = remote && !adoptId ? sync.needsReplacement?.(object, resolved, remote) : undefined;
    if (remote && replaceBecause) {
      const replacement = await sync.create(object, resolved, {
        idempotencyKey: `${object.metadata?.uid}-${generation}-replaces-${remote.id}`,
      });
      await sync.afterCreate?.(object, replacement);
      await deleteIgnoringNotFound(sync, remote.id, object);
      await announce(
        manager,
        context,
        object,
        replacement.id,
        'Replaced',
        `${replaceBecause}: replaced ${remote.id} with ${replacement.id}`,
        'warning',
      );
      await writeReady(controller, object, resolved, replacement, 'Replaced');
      return undefined;
    }
    if (remote) {
      const { remote: updated, changed } = await sync.update(object, resolved, remote);
      let reason: string;
      if (adoptId) {
        reason = 'Adopted';
        await announce(manager, context, object, updated.id, reason, `adopted ${updated.id}`);
      } else if (changed) {
        reason = 'Updated';
        await announce(manager, context, object, updated.id, reason, `updated ${updated.id}`);
      } else {
        reason = unchangedReadyReason(object);
      }
      await writeReady(controller, object, resolved, updated, reason);
      return undefined;
    }
    // `<uid>-<generation>`: a retry (or a restart after a crash) before status.id is written
    // replays the first create instead of making a second resource. Recreating one deleted on the
    // server must not replay that old answer, so the gone id goes into the key (still stable
    // across retries, as status.id keeps the gone id until the recreate is recorded).
    const idempotencyKey = statusId
      ? `${object.metadata?.uid}-${generation}-replaces-${statusId}`
      : `${object.metadata?.uid}-${generation}`;
    context.signal.throwIfAborted();
    const created = await sync.create(object, resolved, { idempotencyKey });
    try {
      await sync.afterCreate?.(object, created);
    } catch (error) {
      // Record the id with the failure: a delete of the CR then deletes it, and a new spec does
      // not create a second one (a sync repairs what afterCreate left undone, e.g. by replacing).
      throw new SyncProgressError({ id: created.id, uri: created.uri }, error);
    }
    await announce(manager, context, object, created.id, 'Created', `created ${created.id}`);
    await writeReady(controller, object, resolved, created, 'Created');
    return undefined;
  } catch (error) {
    return failed(controller, context, object, error);
  }
}

/**
 * The Ready reason after a reconcile that changed nothing: the one already there when Ready is
 * True (Created, Updated, ...), so a resync or a poke that finds no drift writes no status at
 * all; UpToDate when it recovers from a failure or a pause.
 */
function unchangedReadyReason(object: ManagedObject): string {
  const ready = getCondition(object.status?.conditions, ConditionType.Ready);
  return ready?.status === 'True' ? ready.reason : 'UpToDate';
}

/** A change made on the server: a Kubernetes Event on the object and a log line with the id. */
async function announce(
  manager: Manager,
  context: ReconcileContext,
  object: ManagedObject,
  id: string,
  reason: string,
  message: string,
  type: 'normal' | 'warning' = 'normal',
): Promise<void> {
  if (type === 'warning') context.log.warn({ id, reason }, message);
  else context.log.info({ id, reason }, message);
  await manager.events[type](object, reason, message);
}

async function deleteIgnoringNotFound<T extends ManagedObject, R, Remote extends RemoteResource>(
  sync: ResourceSync<T, R, Remote>,
  id: string,
  object: T,
): Promise<void> {
  try {
    await sync.delete(id, object);
  } catch (error) {
    if (!isApiNotFound(error)) throw error;
  }
}

/**
 * Reasons not retried for the same generation: only a new spec fixes them. (A wrong adopt-id is
 * fixed by an annotation, which enqueues without a new generation: not in this set.)
 */
const TERMINAL_REASONS = new Set(['InvalidSpec']);

async function readLive<T extends ManagedObject>(
  client: ResourceClient<T>,
  request: ReconcileRequest,
): Promise<T | undefined> {
  try {
    return await client.get(request.namespace, request.name);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw new Error(`reading ${request.key} live`, { cause: error });
  }
}

async function writeReady<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  object: T,
  resolved: R,
  remote: Remote,
  reason: string,
): Promise<void> {
  const message = `${remote.id} matches the spec`;
  await writeStatus(controller, object, {
    ready: { status: 'True', reason, message },
    synced: { status: 'True', reason: 'Synced', message },
    remote,
    fields: controller.sync.statusFields?.(object, remote, resolved),
  });
}

/**
 * Reports a failure: API 400s (and other terminal 4xx) end the reconcile (retried only for a new
 * generation); 429, 5xx and transport errors are reported as ApiUnavailable and rethrown for backoff.
 */
async function failed<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  object: T,
  error: unknown,
): Promise<Outcome> {
  // Aborted: this replica may no longer lead; the status is the next leader's to write.
  if (context.signal.aborted) throw error;
  const fields = error instanceof SyncProgressError ? error.statusFields : undefined;
  const cause = error instanceof SyncProgressError ? error.cause : error;
  const terminal = terminalReason(cause);
  const message = cause instanceof Error ? cause.message : String(cause);
  if (terminal) {
    // Not retried, so the manager never logs it: say it here, with the id when there is one.
    context.log.warn({ id: object.status?.id, reason: terminal }, message);
    await controller.manager.events.warning(object, terminal, message);
    await writeStatus(controller, object, {
      ready: { status: 'False', reason: terminal, message },
      synced: { status: 'False', reason: terminal, message },
      fields,
    });
    return undefined;
  }
  const reason = retriedReason(cause);
  try {
    await writeStatus(controller, object, {
      ready: { status: 'False', reason, message },
      synced: { status: 'False', reason, message },
      fields,
    });
  } catch (statusError) {
    throw new Error(message, { cause: new AggregateError([error, statusError]) });
  }
  throw error;
}

/**
 * Only what the spec itself got wrong is terminal: a 400, 413 or 422 from the server, or the
 * sync's own TerminalSyncError. Other 4xx can heal without a spec change (a rotated API key 401/
 * 403, a hostport another edge releases 409, a resource deleted between read and write 404), so
 * they are retried with backoff like 429 and 5xx.
 */
function terminalReason(error: unknown): string | undefined {
  if (error instanceof TerminalSyncError) return error.reason;
  if (error instanceof EdgewardApiError && [400, 413, 422].includes(error.statusCode)) return 'InvalidSpec';
  return undefined;
}

/** The Ready reason of a failure that is retried. */
function retriedReason(error: unknown): string {
  if (!(error instanceof EdgewardApiError)) return 'ApiUnavailable';
  const reasons: Record<number, string> = {
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    409: 'Conflict',
  };
  return reasons[error.statusCode] ?? 'ApiUnavailable';
}

function currentCondition(object: ManagedObject, type: string): StatusUpdate['ready'] {
  const condition = getCondition(object.status?.conditions, type);
  return condition
    ? {
        status: condition.status === 'True' ? 'True' : 'False',
        reason: condition.reason,
        message: condition.message,
      }
    : { status: 'False', reason: 'Pending', message: 'not reconciled yet' };
}

async function writeStatus<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  object: T,
  update: StatusUpdate,
): Promise<void> {
  // The generation whose spec this reconcile worked from, not that of a copy re-read after a write
  // conflict: stamping a newer one would claim (or, if terminal, skip) a spec never applied.
  const worked = object.metadata?.generation;
  await controller.manager.statusWriter.write<ManagedStatus, T>(controller.client, object, (current) => {
    const readyNow = getCondition(current.status?.conditions, ConditionType.Ready);
    const readyGeneration = update.paused ? readyNow?.observedGeneration : worked;
    let conditions = setCondition(
      current.status?.conditions,
      { type: ConditionType.Ready, ...update.ready },
      { observedGeneration: readyGeneration },
    );
    conditions = setCondition(
      conditions,
      { type: ConditionType.Synced, ...update.synced },
      { observedGeneration: worked },
    );
    const observedGeneration = update.paused ? current.status?.observedGeneration : worked;
    const status: ManagedStatus = { ...current.status, ...update.fields, observedGeneration, conditions };
    if (observedGeneration === undefined) delete status.observedGeneration;
    if (update.remote) {
      status.id = update.remote.id;
      status.uri = update.remote.uri;
    }
    return status;
  });
}
