import type { ResourceKind } from '../runtime/kinds.js';
import type { Controller, Manager, RegisteredController } from '../runtime/manager.js';
import {
  type ManagedObject,
  type RemoteResource,
  type ResourceSync,
  reconcileManaged,
} from './managed-resource.js';

/**
 * Registers a kind whose reconcile is the managed skeleton around `sync`: its shared informer and
 * typed client, plus what it names (`references`) and the kinds whose changes reach it (`watches`).
 */
export function registerManaged<T extends ManagedObject, R, Remote extends RemoteResource>(
  manager: Manager,
  kind: ResourceKind,
  sync: ResourceSync<T, R, Remote>,
  options: Pick<Controller<T>, 'references' | 'watches'> = {},
): RegisteredController<T> {
  const controller = {
    manager,
    kind,
    client: manager.resources<T>(kind),
    informer: manager.informer<T>(kind),
    sync,
  };
  return manager.register<T>({
    kind,
    ...options,
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
