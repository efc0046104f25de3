import { EdgewardApiError } from '../../../client/errors.js';
import type { ReconcileContext, ReconcileOutcome } from '../../runtime/controller.js';
import { hasFinalizer, removeFinalizer } from '../../runtime/finalizers.js';
import { isEdgewardNotFound } from '../shared/edgeward-errors.js';
import { announce } from './announce.js';
import { failed } from './failures.js';
import type { ManagedController } from './managed-controller.js';
import type { ManagedObject, RemoteResource, ResourceSync } from './managed-resource.js';
import { writeStatus } from './status.js';
import { resendUnconfirmed } from './unconfirmed-create.js';

/**
 * The CR is being deleted. deletionPolicy Delete deletes the server resource (and what the sync
 * keeps besides it) first; Orphan leaves it and lets the sync let go of what it owns. Then the
 * finalizer goes, and Kubernetes deletes the CR.
 */
export async function deleteManaged<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  object: T,
): Promise<ReconcileOutcome | undefined> {
  if (!hasFinalizer(object)) return undefined;
  const { sync, memory } = controller;
  const uid = object.metadata?.uid;
  let id = object.status?.id;
  if (!id && memory.unconfirmed(uid)) {
    // A create whose answer was lost may have made the resource: resending it finds it (or makes
    // it), so the delete (or the orphaning) below covers it instead of leaving it untracked.
    const lost = memory.unconfirmed(uid);
    try {
      id = lost ? (await resendUnconfirmed(controller, lost))?.id : undefined;
    } catch (error) {
      return failed(controller, context, object, error);
    }
  }
  if ((object.spec.deletionPolicy ?? 'Delete') === 'Orphan') {
    try {
      await sync.orphan?.(object);
    } catch (error) {
      return failed(controller, context, object, error);
    }
  } else {
    try {
      if (id) await deleteRemoteResource(sync, id, object);
      await sync.deleteKept?.(object);
    } catch (error) {
      if (isInUse(error)) return reportDeleteBlocked(controller, object, error);
      return failed(controller, context, object, error);
    }
    if (id) await announce(controller.events, context, object, id, 'Deleted', `deleted ${id} on the server`);
  }
  await removeFinalizer(controller.client, object);
  memory.forget(uid);
  return undefined;
}

/** Deletes the server resource `id`; one already gone counts as deleted. */
export async function deleteRemoteResource<T extends ManagedObject, R, Remote extends RemoteResource>(
  sync: ResourceSync<T, R, Remote>,
  id: string,
  object: T,
): Promise<void> {
  try {
    await sync.delete(id, object);
  } catch (error) {
    if (!isEdgewardNotFound(error)) throw error;
  }
}

/** The server refuses the delete because something still uses it (a CA an edge still names). */
const isInUse = (error: unknown): error is EdgewardApiError =>
  error instanceof EdgewardApiError && error.statusCode === 409;

/**
 * Not terminal: the user is expected to remove the use, so the delete is retried with backoff
 * (rethrown) and status and an Event say why the CR stays.
 */
async function reportDeleteBlocked<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  object: T,
  error: EdgewardApiError,
): Promise<never> {
  await writeStatus(controller, object, {
    ready: { status: 'False', reason: 'DeleteBlocked', message: error.message },
    synced: { status: 'False', reason: 'DeleteBlocked', message: error.message },
  });
  await controller.events.warning(object, 'DeleteBlocked', error.message);
  throw error;
}
