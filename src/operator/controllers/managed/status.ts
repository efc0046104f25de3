import { ConditionType, type ConditionUpdate, getCondition, setCondition } from '../../runtime/conditions.js';
import type { ReconcileContext, ReconcileOutcome } from '../../runtime/controller.js';
import { EXTERNAL_ID_ANNOTATION } from '../../runtime/external-id.js';
import type { ManagedController } from './managed-controller.js';
import type { ExtraConditions, ManagedObject, ManagedStatus, RemoteResource } from './managed-resource.js';

type ConditionFields = { status: 'True' | 'False'; reason: string; message: string };

/** Everything one reconcile says in status: it is written once, at the end. */
export interface StatusUpdate {
  ready: ConditionFields;
  synced: ConditionFields;
  remote?: RemoteResource;
  fields?: Record<string, unknown>;
  /** Conditions besides Ready and Synced (the sync's `extraConditions`); others keep what they had. */
  conditions?: ConditionUpdate[];
  /** Condition types to take out of status (the sync's `extraConditions` that no longer apply). */
  removedConditions?: string[];
  /** Paused: only Synced speaks for this generation; Ready and observedGeneration stay as they were. */
  paused?: boolean;
}

export async function writeStatus<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  object: T,
  update: StatusUpdate,
): Promise<void> {
  // The generation whose spec this reconcile worked from, not that of a copy re-read after a write
  // conflict: stamping a newer one would claim (or, if terminal, skip) a spec never applied.
  const worked = object.metadata?.generation;
  await controller.statusWriter.write<ManagedStatus, T>(controller.client, object, (current) => {
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
    for (const extra of update.conditions ?? []) {
      conditions = setCondition(conditions, extra, { observedGeneration: worked });
    }
    const removed = update.removedConditions ?? [];
    if (removed.length > 0) conditions = conditions.filter((condition) => !removed.includes(condition.type));
    const observedGeneration = update.paused ? current.status?.observedGeneration : worked;
    const status: ManagedStatus = { ...current.status, ...update.fields, observedGeneration, conditions };
    if (observedGeneration === undefined) delete status.observedGeneration;
    if (update.remote) {
      status.id = update.remote.id;
      status.uri = update.remote.uri;
    }
    return status;
  });
  // Until the cache shows it, a reconcile of this object reads it live (reconcile.ts).
  const id = update.remote?.id ?? update.fields?.id;
  if (typeof id === 'string') controller.memory.recorded(object.metadata?.uid, id);
}

/**
 * Ready and Synced True for `remote`, with the sync's own status fields and extra conditions; the
 * outcome carries the extra conditions' requeue, if they asked for one.
 */
export async function writeReady<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  object: T,
  resolved: R,
  remote: Remote,
  reason: string,
): Promise<ReconcileOutcome | undefined> {
  const extra = await readExtraConditions(controller, context, object, remote);
  const message = `${remote.id} matches the spec`;
  await writeStatus(controller, object, {
    ready: { status: 'True', reason, message },
    synced: { status: 'True', reason: 'Synced', message },
    remote,
    fields: controller.sync.statusFields?.(object, remote, resolved),
    conditions: extra.conditions,
    removedConditions: extra.removed,
  });
  await mirrorExternalId(controller, object, remote.id);
  return extra.requeueAfterMs === undefined ? undefined : { requeueAfterMs: extra.requeueAfterMs };
}

/** A condition as it stands, to write back unchanged (Pending when there is none yet). */
export function currentCondition(object: ManagedObject, type: string): ConditionFields {
  const condition = getCondition(object.status?.conditions, type);
  return condition
    ? {
        status: condition.status === 'True' ? 'True' : 'False',
        reason: condition.reason,
        message: condition.message,
      }
    : { status: 'False', reason: 'Pending', message: 'not reconciled yet' };
}

/**
 * Mirrors status.id into the external-id annotation (runtime/external-id.ts), so the object finds
 * its resource again when status is lost. Written only when it differs: once per create or
 * replacement, and once for objects made before the annotation existed.
 */
async function mirrorExternalId<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  object: T,
  id: string,
): Promise<void> {
  if (object.metadata?.annotations?.[EXTERNAL_ID_ANNOTATION] === id) return;
  const patch = { metadata: { annotations: { [EXTERNAL_ID_ANNOTATION]: id } } };
  await controller.client.patch(object.metadata?.namespace, object.metadata?.name ?? '', patch);
}

const NONE: ExtraConditions = { conditions: [] };

/**
 * The sync's conditions besides Ready and Synced, for a resource that matches the spec. A failure
 * to read them is logged and reported as none: each keeps what it had, and the reconcile (and
 * Ready) does not suffer from how the resource is doing.
 */
export async function readExtraConditions<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  object: T,
  remote: Remote,
): Promise<ExtraConditions> {
  const { extraConditions } = controller.sync;
  if (!extraConditions) return NONE;
  try {
    return await extraConditions(object, remote);
  } catch (error) {
    // Aborted: the reconcile stops here, as it would at its next server call.
    context.signal.throwIfAborted();
    context.log.warn({ err: error, id: remote.id }, 'reading conditions failed: keeping the previous ones');
    return NONE;
  }
}
