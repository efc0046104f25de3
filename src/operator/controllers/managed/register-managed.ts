import type { Controller, RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import type { ResourceKind } from '../../runtime/resource-types.js';
import { CreateMemory } from './create-memory.js';
import type { ManagedController } from './managed-controller.js';
import type { ManagedObject, RemoteResource, ResourceSync } from './managed-resource.js';
import { reconcileManaged } from './reconcile.js';

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
  const controller: ManagedController<T, R, Remote> = {
    client: manager.resources<T>(kind),
    informer: manager.informer<T>(kind),
    sync,
    statusWriter: manager.statusWriter,
    events: manager.events,
    memory: new CreateMemory<T, R>(),
  };
  return manager.register<T>({
    kind,
    ...options,
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
