import type { EdgewardClient } from '../../../client/index.js';
import { SECRET } from '../../runtime/kinds.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { EVENT_DESTINATION } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { NAMED_SECRETS_WATCH, type SecretObject, secretReferences } from '../secret-values.js';
import { type EventDestinationObject, eventDestinationSync } from './sync.js';
import { targetSecretRequests } from './targets.js';

/**
 * EventDestination -> `/event_destinations`, secrets read from the Secrets the target names; a
 * change of one of those Secrets sends the target again.
 */
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
    references: (destination) => secretReferences(targetSecretRequests(destination.spec.target)),
    watches: [NAMED_SECRETS_WATCH],
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
