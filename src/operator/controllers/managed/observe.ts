import type { ReconcileContext } from '../../runtime/controller.js';
import { EXTERNAL_ID_ANNOTATION } from '../../runtime/external-id.js';
import { isEdgewardNotFound } from '../shared/edgeward-errors.js';
import {
  ADOPT_ANNOTATION,
  type ManagedObject,
  type RemoteResource,
  type ResourceSync,
} from './managed-resource.js';
import { TerminalSyncError } from './sync-errors.js';

/** What is on the server for an object, as `applyDesired` needs to know it. */
export interface Observation<Remote extends RemoteResource> {
  /**
   * The resource status.id records (made or adopted by an earlier reconcile) or, when status was
   * lost (a restore), the external-id annotation mirrors.
   */
  statusId: string | undefined;
  /** Set when statusId came from the external-id annotation: status had none. */
  recovered?: boolean;
  /** The adopt-id annotation, while status records no id yet. */
  adoptId: string | undefined;
  /** The server resource now; undefined when there is none yet, or it was deleted on the server. */
  remote: Remote | undefined;
}

/**
 * Reads the server resource the object stands for: the one status.id records or, before there is
 * one, the one the adopt-id annotation names, else the one the external-id annotation mirrors. One deleted on the server reads as none, so it is
 * recreated; an adopt target that does not exist is terminal (fixed by the annotation).
 */
export async function observeRemote<T extends ManagedObject, R, Remote extends RemoteResource>(
  sync: ResourceSync<T, R, Remote>,
  object: T,
  context: ReconcileContext,
): Promise<Observation<Remote>> {
  const annotations = object.metadata?.annotations ?? {};
  // An adopt-id is the user's explicit word; the external-id only the operator's own earlier one.
  const adoptId = object.status?.id ? undefined : annotations[ADOPT_ANNOTATION];
  const recovered = !object.status?.id && !adoptId && annotations[EXTERNAL_ID_ANNOTATION] !== undefined;
  const statusId = object.status?.id ?? (recovered ? annotations[EXTERNAL_ID_ANNOTATION] : undefined);
  const id = statusId ?? adoptId;
  if (!id) return { statusId, adoptId, remote: undefined };
  try {
    return { statusId, adoptId, remote: await sync.get(id, object), ...(recovered ? { recovered } : {}) };
  } catch (error) {
    if (!isEdgewardNotFound(error)) throw error;
    if (adoptId) {
      throw new TerminalSyncError('AdoptTargetNotFound', `${ADOPT_ANNOTATION}: ${adoptId} does not exist`);
    }
    context.log.info({ id }, 'server resource gone: recreating it');
    return { statusId, adoptId, remote: undefined };
  }
}
