import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import { isBeingDeleted } from '../../runtime/finalizers.js';
import type { InformerReader } from '../../runtime/informer.js';
import type { Manager } from '../../runtime/manager.js';
import { objectKey } from '../../runtime/resource-types.js';
import { registerManaged } from '../managed/register-managed.js';
import { BOT_USER, SSH_CREDENTIAL, TUNNEL_CREDENTIAL } from '../resource-types.js';
import { type BotUserObject, botUserSync } from './sync.js';

type OwnedCredential = KubernetesObject & { spec?: { ownerRef?: { name: string } } };

/**
 * The BotUser a credential names, but only while that bot is being deleted: the server refuses to
 * delete a bot that still owns credentials (DeleteBlocked), and each credential going away is the
 * moment to try again, instead of waiting out the backoff.
 */
function deletingOwnerOf(bots: InformerReader<BotUserObject>) {
  return (credential: KubernetesObject): string[] => {
    const name = (credential as OwnedCredential).spec?.ownerRef?.name;
    const namespace = credential.metadata?.namespace;
    const bot = name ? bots.cache.get(namespace, name) : undefined;
    return bot && isBeingDeleted(bot) && name ? [objectKey(namespace, name)] : [];
  };
}

/** BotUser -> `/bot_users`. No references; watches the credentials that name it as their owner. */
export function registerBotUser(manager: Manager, api: EdgewardClient): RegisteredController<BotUserObject> {
  const informer = manager.informer<BotUserObject>(BOT_USER);
  return registerManaged(manager, BOT_USER, botUserSync(api), {
    watches: [
      { kind: TUNNEL_CREDENTIAL, map: deletingOwnerOf(informer) },
      { kind: SSH_CREDENTIAL, map: deletingOwnerOf(informer) },
    ],
  });
}
