import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import type { BotUserObject } from '../bot-user/sync.js';
import { registerManaged } from '../managed/register-managed.js';
import { BOT_USER, SSH_CREDENTIAL } from '../resource-types.js';
import { credentialOwnerReferences } from '../shared/credential-owner.js';
import { type SshCredentialObject, sshCredentialSync } from './sync.js';

/** SSHCredential -> `/ssh_credentials`. Watches its BotUser owner (by the reference index). */
export function registerSshCredential(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<SshCredentialObject> {
  const sync = sshCredentialSync({ api, bots: manager.informer<BotUserObject>(BOT_USER) });
  return registerManaged(manager, SSH_CREDENTIAL, sync, {
    references: (credential) => credentialOwnerReferences(credential.spec),
    watches: [{ kind: BOT_USER }],
  });
}
