import { ConditionType } from '../../runtime/conditions.js';
import type { ReconcileContext, ReconcileOutcome, ReconcileRequest } from '../../runtime/controller.js';
import { addFinalizer, isBeingDeleted } from '../../runtime/finalizers.js';
import { getIfExists } from '../../runtime/get-if-exists.js';
import { applyDesired } from './apply.js';
import { deleteManaged } from './delete.js';
import { failed, failedTerminally } from './failures.js';
import type { ManagedController } from './managed-controller.js';
import {
  type ManagedObject,
  PAUSED_ANNOTATION,
  type RemoteResource,
  type Resolution,
} from './managed-resource.js';
import { type Observation, observeRemote } from './observe.js';
import { currentCondition, writeStatus } from './status.js';

/**
 * The reconcile every edgeward controller shares. A paused object only says so; a deleted one is
 * cleaned up (delete.ts); otherwise the finalizer goes on, references are resolved, what is on the
 * server is observed (observe.ts) and brought to the spec (apply.ts: adopt, create, update,
 * replace). Status is written once per reconcile. A controller supplies only a `ResourceSync`
 * (managed-resource.ts).
 */
export async function reconcileManaged<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  request: ReconcileRequest,
  context: ReconcileContext,
): Promise<ReconcileOutcome | undefined> {
  const object = await currentObject(controller, request);
  if (!object) return undefined;
  if (object.metadata?.annotations?.[PAUSED_ANNOTATION] === 'true') {
    await reportPaused(controller, object);
    return undefined;
  }
  if (isBeingDeleted(object)) return deleteManaged(controller, context, object);
  // A terminal failure of this very generation is not retried by resyncs: only a new spec can fix it.
  if (failedTerminally(object)) return undefined;
  return syncToServer(controller, context, object);
}

/**
 * The object from the cache, or read live when the cache may lag behind a status.id this process
 * wrote; undefined: deleted.
 */
async function currentObject<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  request: ReconcileRequest,
): Promise<T | undefined> {
  const cached = controller.informer.cache.get(request.namespace, request.name);
  const uid = cached?.metadata?.uid;
  if (!cached || cached.status?.id) {
    controller.memory.caughtUp(uid);
    return cached;
  }
  // A key re-queued by an event during its previous reconcile can run before the cache has that
  // reconcile's status write: without status.id it would create again (or, being deleted, delete
  // nothing on the server). One live read settles it, needed only when this process did write an
  // id the cache does not show yet (or, for a delete, rare and with nothing to replay, another
  // replica may have): a new object's first reconcile reads nothing live.
  if (controller.memory.recordedId(uid) === undefined && !isBeingDeleted(cached)) return cached;
  return getIfExists(controller.client, request.namespace, request.name, `reading ${request.key} live`);
}

/** Paused: no server calls, no finalizer; only Synced says so (Ready stays as it was). */
async function reportPaused<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  object: T,
): Promise<void> {
  await writeStatus(controller, object, {
    ready: currentCondition(object, ConditionType.Ready),
    synced: { status: 'False', reason: 'Paused', message: `${PAUSED_ANNOTATION} is "true"` },
    paused: true,
  });
}

async function syncToServer<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  found: T,
): Promise<ReconcileOutcome | undefined> {
  // Before any remote create, so a server resource never exists without a finalizer to clean it up.
  const object = await addFinalizer(controller.client, found);

  let resolution: Resolution<R>;
  try {
    resolution = await controller.sync.resolve(object, context);
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

  try {
    // Aborted (leadership lost, shutdown timeout): start no server write another replica may make.
    context.signal.throwIfAborted();
    const { current, observed } = await observeFresh(controller, context, object);
    return await applyDesired(controller, context, { object: current, resolved: resolution.value }, observed);
  } catch (error) {
    return failed(controller, context, object, error);
  }
}

/**
 * Observes the server resource; when the one status.id names is gone, first makes sure status.id
 * was not simply stale in the cache (a replacement written by the previous reconcile, whose watch
 * event has not arrived yet): a live read with another id is observed instead, so a resource
 * replaced a moment ago is not recreated (and reported Created) a second time.
 */
async function observeFresh<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  object: T,
): Promise<{ current: T; observed: Observation<Remote> }> {
  const observed = await observeRemote(controller.sync, object, context);
  if (observed.remote || !observed.statusId) return { current: object, observed };
  const namespace = object.metadata?.namespace;
  const name = object.metadata?.name ?? '';
  const live = await getIfExists(controller.client, namespace, name, `reading ${namespace}/${name} live`);
  if (!live?.status?.id || live.status.id === observed.statusId) return { current: object, observed };
  context.log.info({ stale: observed.statusId, id: live.status.id }, 'status.id was stale in the cache');
  return { current: live, observed: await observeRemote(controller.sync, live, context) };
}
