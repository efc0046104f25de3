import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import { isBeingDeleted } from '../../runtime/finalizers.js';
import type { Informer } from '../../runtime/informer.js';
import { objectKey } from '../../runtime/kinds.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { BOT_USER, SSH_CREDENTIAL, TUNNEL_CREDENTIAL } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type BotUserObject, botUserSync } from './sync.js';

type OwnedCredential = KubernetesObject & { spec?: { ownerRef?: { name: string } } };

/**
 * The BotUser a credential names, but only while that bot is being deleted: the server refuses to
 * delete a bot that still owns credentials (DeleteBlocked), and each credential going away is the
 * moment to try again, instead of waiting out the backoff.
 */
function deletingOwnerOf(bots: Informer<BotUserObject>) {
  return (credential: KubernetesObject): string[] => {
    const name = (credential as OwnedCredential).spec?.ownerRef?.name;
    const namespace = credential.metadata?.namespace;
    const bot = name ? bots.cache.get(namespace, name) : undefined;
    return bot && isBeingDeleted(bot) && name ? [objectKey(namespace, name)] : [];
  };
}

/** BotUser -> `/bot_users`. No references; watches the credentials that name it as their owner. */
export function registerBotUser(manager: Manager, api: EdgewardClient): RegisteredController<BotUserObject> {
  const client = manager.resources<BotUserObject>(BOT_USER);
  const informer = manager.informer<BotUserObject>(BOT_USER);
  const controller = { manager, kind: BOT_USER, client, informer, sync: botUserSync(api) };
  return manager.register<BotUserObject>({
    kind: BOT_USER,
    watches: [
      { kind: TUNNEL_CREDENTIAL, map: deletingOwnerOf(informer) },
      { kind: SSH_CREDENTIAL, map: deletingOwnerOf(informer) },
    ],
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
