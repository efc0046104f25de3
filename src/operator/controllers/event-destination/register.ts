import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { SECRET } from '../../runtime/resource-types.js';
import { registerManaged } from '../managed/register-managed.js';
import { EVENT_DESTINATION } from '../resource-types.js';
import { NAMED_SECRETS_WATCH, type SecretObject, secretReferences } from '../shared/secret-values.js';
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
  const sync = eventDestinationSync(api, manager.resources<SecretObject>(SECRET));
  return registerManaged(manager, EVENT_DESTINATION, sync, {
    references: (destination) => secretReferences(targetSecretRequests(destination.spec.target)),
    watches: [NAMED_SECRETS_WATCH],
  });
}
