import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { BOT_USER } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type BotUserObject, botUserSync } from './sync.js';

/** BotUser -> `/bot_users`. No references. */
export function registerBotUser(manager: Manager, api: EdgewardClient): RegisteredController<BotUserObject> {
  const client = manager.resources<BotUserObject>(BOT_USER);
  const informer = manager.informer<BotUserObject>(BOT_USER);
  const controller = { manager, kind: BOT_USER, client, informer, sync: botUserSync(api) };
  return manager.register<BotUserObject>({
    kind: BOT_USER,
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
