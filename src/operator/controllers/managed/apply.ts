import { ConditionType, getCondition } from '../../runtime/conditions.js';
import type { ReconcileContext, ReconcileOutcome } from '../../runtime/controller.js';
import { EXTERNAL_ID_ANNOTATION } from '../../runtime/external-id.js';
import { announce } from './announce.js';
import { deleteRemoteResource } from './delete.js';
import type { ManagedController } from './managed-controller.js';
import type { ManagedObject, RemoteResource } from './managed-resource.js';
import type { Observation } from './observe.js';
import { writeReady, writeStatus } from './status.js';
import { SyncProgressError } from './sync-errors.js';
import {
  answeredWithoutCreating,
  keyMadeId,
  madeBeforeByKey,
  resendUnconfirmed,
} from './unconfirmed-create.js';

/** What the server is brought to. */
export interface Desired<T extends ManagedObject, R> {
  /** The object, its finalizer in place. */
  object: T;
  resolved: R;
}

/**
 * Brings the server to the spec from what `observeRemote` saw: creates what is not there,
 * replaces what the sync says must be replaced (never an adopted resource), else updates only
 * what differs. Each change is announced, and Ready written for the resulting resource (the
 * outcome: a requeue the sync's extra conditions asked for).
 */
export async function applyDesired<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  desired: Desired<T, R>,
  observed: Observation<Remote>,
): Promise<ReconcileOutcome | undefined> {
  const { remote, adoptId } = observed;
  if (!remote) return createRemote(controller, context, desired, observed.statusId);
  const replaceBecause = adoptId
    ? undefined
    : controller.sync.needsReplacement?.(desired.object, desired.resolved, remote);
  if (replaceBecause) {
    const replacement =
      typeof replaceBecause === 'string' ? { because: replaceBecause, routine: false } : replaceBecause;
    return replaceRemote(controller, context, desired, remote, replacement);
  }
  return updateRemote(controller, context, desired, remote, { adoptId, recovered: observed.recovered });
}

async function createRemote<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  desired: Desired<T, R>,
  goneId: string | undefined,
): Promise<ReconcileOutcome | undefined> {
  const { sync, memory } = controller;
  const { object, resolved } = desired;
  const uid = object.metadata?.uid;
  // The key is the uid (createKeyOf, below): a retry (or a restart after a crash) before status.id is
  // written replays the first create instead of making a second resource, and one whose inputs
  // changed meanwhile is refused naming what the first made (trackMadeBefore). Recreating one
  // deleted on the server must not replay that old answer, so the gone id goes into the key (still
  // stable across retries, as status.id keeps the gone id until the recreate is recorded).
  const idempotencyKey = createKeyOf(object, goneId);
  context.signal.throwIfAborted();
  // A create whose answer was lost goes again first, as it was: with other inputs now, the create
  // below would make a second resource beside the one it may have made.
  const lost = memory.unconfirmed(uid);
  if (lost) {
    const found = await resendUnconfirmed(controller, lost);
    if (found) return adoptUnconfirmed(controller, context, desired, found);
  }
  let created: Remote;
  try {
    created = await sync.create(object, resolved, { idempotencyKey });
  } catch (error) {
    const made = madeBeforeByKey(error);
    if (made) return trackMadeBefore(controller, context, object, made);
    if (!answeredWithoutCreating(error))
      memory.rememberUnconfirmed(uid, { key: idempotencyKey, object, resolved });
    throw error;
  }
  memory.confirmed(uid);
  try {
    await sync.afterCreate?.(object, created);
  } catch (error) {
    // Record the id with the failure: a delete of the CR then deletes it, and a new spec does
    // not create a second one (a sync repairs what afterCreate left undone, e.g. by replacing).
    throw new SyncProgressError({ id: created.id, uri: created.uri }, error);
  }
  await announce(controller.events, context, object, created.id, 'Created', `created ${created.id}`);
  return writeReady(controller, context, object, resolved, created, 'Created');
}

/**
 * The resource an unanswered create made, found by resending it after the inputs changed: it is
 * this object's (never a second one beside it), so it runs `afterCreate` (a one-time token the
 * replay carries) and is then updated to the current spec like any existing resource.
 */
async function adoptUnconfirmed<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  { object, resolved }: Desired<T, R>,
  found: Remote,
): Promise<ReconcileOutcome | undefined> {
  try {
    await controller.sync.afterCreate?.(object, found);
  } catch (error) {
    throw new SyncProgressError({ id: found.id, uri: found.uri }, error);
  }
  let updated: Remote;
  try {
    ({ remote: updated } = await controller.sync.update(object, resolved, found));
  } catch (error) {
    throw new SyncProgressError({ id: found.id, uri: found.uri }, error);
  }
  await announce(
    controller.events,
    context,
    object,
    updated.id,
    'Created',
    `created ${updated.id} (its first answer was lost; brought to the current spec)`,
  );
  return writeReady(controller, context, object, resolved, updated, 'Created');
}

/**
 * The resource an earlier create of this object made (its answer lost, its inputs changed since: the
 * server named it in refusing the key): recorded in status.id, and the reconcile runs again at once,
 * so it is observed and brought to the current spec (updated, or replaced where the sync must, as
 * a credential whose token went with the lost answer), never left beside a second one.
 */
async function trackMadeBefore<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  object: T,
  made: { id: string; progress: Record<string, unknown> },
): Promise<ReconcileOutcome> {
  const message = `an earlier create's answer was lost and the spec changed since: tracking ${made.id}, which it made, to bring it to the current spec`;
  await writeStatus(controller, object, {
    ready: { status: 'False', reason: 'LostCreateFound', message },
    synced: { status: 'False', reason: 'LostCreateFound', message },
    fields: { ...made.progress, id: made.id },
  });
  await announce(controller.events, context, object, made.id, 'LostCreateFound', message, 'warning');
  return { requeueAfterMs: 0 };
}

/**
 * A replacement creates the new resource (under the key a recreate would use, so a crash
 * anywhere in between replays the same new one), runs `afterCreate`, then deletes the old one.
 */
async function replaceRemote<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  { object, resolved }: Desired<T, R>,
  remote: Remote,
  { because, routine }: { because: string; routine: boolean },
): Promise<ReconcileOutcome | undefined> {
  const { sync } = controller;
  const replacement = await createReplacement(controller, object, resolved, remote.id);
  await sync.afterCreate?.(object, replacement);
  await deleteRemoteResource(sync, remote.id, object);
  await announce(
    controller.events,
    context,
    object,
    replacement.id,
    'Replaced',
    `${because}: replaced ${remote.id} with ${replacement.id}`,
    routine ? 'normal' : 'warning',
  );
  return writeReady(controller, context, object, resolved, replacement, 'Replaced');
}

/**
 * The replacement's create. One an earlier attempt made (its answer lost, the spec changed since,
 * so the server refuses the key naming it) was never recorded and its token, if any, is lost: it
 * is deleted and the create goes under a key that names it, the same after any restart.
 */
async function createReplacement<T extends ManagedObject, R, Remote extends RemoteResource>(
  { sync }: ManagedController<T, R, Remote>,
  object: T,
  resolved: R,
  replacedId: string,
): Promise<Remote> {
  const firstKey = createKeyOf(object, replacedId);
  let idempotencyKey = firstKey;
  for (let attempt = 1; ; attempt++) {
    try {
      return await sync.create(object, resolved, { idempotencyKey });
    } catch (error) {
      const made = keyMadeId(error);
      // Each lost answer and changed spec adds one: a few in a row would mean something else is wrong.
      if (!made || attempt >= 10) throw error;
      await deleteRemoteResource(sync, made, object);
      idempotencyKey = `${firstKey}-after-${made}`;
    }
  }
}

async function updateRemote<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  { object, resolved }: Desired<T, R>,
  remote: Remote,
  found: { adoptId: string | undefined; recovered: boolean | undefined },
): Promise<ReconcileOutcome | undefined> {
  const { remote: updated, changed } = await controller.sync.update(object, resolved, remote);
  let reason: string;
  if (found.adoptId) {
    reason = 'Adopted';
    await announce(controller.events, context, object, updated.id, reason, `adopted ${updated.id}`);
  } else if (found.recovered) {
    // Status was lost (a restore, a move to another cluster): the annotation named the resource.
    reason = 'Recovered';
    const message = `status had no id: tracking ${updated.id}, which ${EXTERNAL_ID_ANNOTATION} names`;
    await announce(controller.events, context, object, updated.id, reason, message);
  } else if (changed) {
    reason = 'Updated';
    await announce(controller.events, context, object, updated.id, reason, `updated ${updated.id}`);
  } else {
    reason = unchangedReadyReason(object);
  }
  return writeReady(controller, context, object, resolved, updated, reason);
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

/**
 * The Idempotency-Key a create is given: the object's uid, and for a recreate (the old one deleted
 * on the server) or a replacement the id it replaces, so that the answer that made the old one is
 * not replayed. A retry of the same create replays it; one whose body changed is refused with the
 * id of what the key made (apply.ts tracks it), so a lost answer never leaves a second resource.
 */
export function createKeyOf(object: ManagedObject, replacesId?: string): string {
  const key = `${object.metadata?.uid}`;
  return replacesId ? `${key}-replaces-${replacesId}` : key;
}
