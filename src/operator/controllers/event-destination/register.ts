import type { EdgewardClient } from '../../../client/index.js';
import { SECRET } from '../../runtime/kinds.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { EVENT_DESTINATION } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import type { SecretObject } from '../secret-values.js';
import { type EventDestinationObject, eventDestinationSync } from './sync.js';

/** EventDestination -> `/event_destinations`, secrets read from the Secrets the target names. */
export function registerEventDestination(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<EventDestinationObject> {
  const client = manager.resources<EventDestinationObject>(EVENT_DESTINATION);
  const informer = manager.informer<EventDestinationObject>(EVENT_DESTINATION);
  const sync = eventDestinationSync(api, manager.resources<SecretObject>(SECRET));
  const controller = { manager, kind: EVENT_DESTINATION, client, informer, sync };
  return manager.register<EventDestinationObject>({
    kind: EVENT_DESTINATION,
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
