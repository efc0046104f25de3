import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { SECRET } from '../../runtime/resource-types.js';
import { ownersOf } from '../../runtime/watch-mappers.js';
import type { BotUserObject } from '../bot-user/sync.js';
import { registerManaged } from '../managed/register-managed.js';
import { BOT_USER, TUNNEL_CREDENTIAL } from '../resource-types.js';
import { credentialOwnerReferences } from '../shared/credential-owner.js';
import { ownedSecretsWatch } from '../shared/owned-secrets.js';
import type { SecretObject } from '../shared/secret-values.js';
import { type TunnelCredentialObject, tunnelCredentialSync } from './sync.js';

/**
 * TunnelCredential -> `/credentials`. Watches its BotUser owner (by the reference index) and the
 * token Secrets it owns (a deleted or edited Secret reconciles its credential).
 */
export function registerTunnelCredential(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<TunnelCredentialObject> {
  const sync = tunnelCredentialSync({
    api,
    secrets: manager.resources<SecretObject>(SECRET),
    bots: manager.informer<BotUserObject>(BOT_USER),
  });
  return registerManaged(manager, TUNNEL_CREDENTIAL, sync, {
    references: (credential) => credentialOwnerReferences(credential.spec),
    watches: [{ kind: BOT_USER }, ownedSecretsWatch(ownersOf(TUNNEL_CREDENTIAL))],
  });
}
