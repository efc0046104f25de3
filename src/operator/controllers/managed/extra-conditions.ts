import type { ReconcileContext } from '../../runtime/manager.js';
import type { ManagedController } from './managed-controller.js';
import type { ExtraConditions, ManagedObject, RemoteResource } from './managed-resource.js';

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
