import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import type { BotUserObject } from '../bot-user/sync.js';
import { credentialOwnerReferences } from '../credential-owner.js';
import { BOT_USER, SSH_CREDENTIAL } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type SshCredentialObject, sshCredentialSync } from './sync.js';

/** SSHCredential -> `/ssh_credentials`. Watches its BotUser owner (by the reference index). */
export function registerSshCredential(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<SshCredentialObject> {
  const client = manager.resources<SshCredentialObject>(SSH_CREDENTIAL);
  const informer = manager.informer<SshCredentialObject>(SSH_CREDENTIAL);
  const sync = sshCredentialSync({ api, bots: manager.informer<BotUserObject>(BOT_USER) });
  const controller = { manager, kind: SSH_CREDENTIAL, client, informer, sync };
  return manager.register<SshCredentialObject>({
    kind: SSH_CREDENTIAL,
    references: (credential) => credentialOwnerReferences(credential.spec),
    watches: [{ kind: BOT_USER }],
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
