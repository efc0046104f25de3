import { EdgewardApiError } from '../../../client/errors.js';
import type { ManagedController } from './managed-controller.js';
import type { ManagedObject, RemoteResource } from './managed-resource.js';
import { SyncProgressError } from './sync-errors.js';

/**
 * Sends a create whose answer was lost again, exactly as it went (its key, its inputs): the server
 * replays the resource it made, or, if the first never arrived, makes it now. Undefined: the
 * server refused it (an answer means nothing was made), so it is forgotten.
 */
export async function resendUnconfirmed<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  lost: { key: string; object: T; resolved: R },
): Promise<Remote | undefined> {
  const uid = lost.object.metadata?.uid;
  try {
    const found = await controller.sync.create(lost.object, lost.resolved, { idempotencyKey: lost.key });
    controller.memory.confirmed(uid);
    return found;
  } catch (error) {
    if (!answeredWithoutCreating(error)) throw error;
    controller.memory.confirmed(uid);
    return undefined;
  }
}

/**
 * The resource this object's create key made before, when the server refused the create as the
 * key reused with another body (409 ERR_EDGEWARD_500 naming it): a create whose answer was lost,
 * its inputs changed before the retry (after a restart, when no memory of it is left). Only this
 * object's creates use its keys, and a key whose resource was recorded is never sent again (a
 * recreate or replacement puts the old id in its key), so what it names is this object's, untracked.
 */
export function madeBeforeByKey(
  error: unknown,
): { id: string; progress: Record<string, unknown> } | undefined {
  const progress = error instanceof SyncProgressError ? error.statusFields : {};
  const made = keyMadeId(error);
  if (!made) return undefined;
  // A sync that made its top resource before a part of it (a policy before its rules) records that
  // one; the key's resource is then the part, which the next reconcile's update finds by listing.
  return { id: typeof progress.id === 'string' ? progress.id : made, progress };
}

/** The id a create's 409 for its key reused with another body names (through a sync's progress). */
export function keyMadeId(error: unknown): string | undefined {
  const cause = error instanceof SyncProgressError ? error.cause : error;
  return cause instanceof EdgewardApiError ? cause.madeByKeyBefore : undefined;
}

/**
 * Whether a failed create certainly made nothing: the edgeward server answered it with an error
 * (a failed run records nothing). No answer (a dropped connection, a timeout) or a gateway's
 * 502/503/504 leave it open.
 */
export function answeredWithoutCreating(error: unknown): boolean {
  // A sync's progress (a backend made before the edge create) wraps the create's own failure.
  const cause = error instanceof SyncProgressError ? error.cause : error;
  return cause instanceof EdgewardApiError && ![502, 503, 504].includes(cause.statusCode);
}
