import type { EdgewardClient } from '../../../client/index.js';
import { SECRET } from '../../runtime/kinds.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { ownersOf } from '../../runtime/watch-mappers.js';
import type { BotUserObject } from '../bot-user/sync.js';
import { BOT_USER, TUNNEL_CREDENTIAL } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import type { SecretObject } from '../secret-values.js';
import { MANAGED_BY, MANAGED_BY_LABEL, type TunnelCredentialObject, tunnelCredentialSync } from './sync.js';

/**
 * TunnelCredential -> `/credentials`. Watches its BotUser owner (by the reference index) and the
 * token Secrets it owns (a deleted or edited Secret reconciles its credential).
 */
export function registerTunnelCredential(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<TunnelCredentialObject> {
  const client = manager.resources<TunnelCredentialObject>(TUNNEL_CREDENTIAL);
  const informer = manager.informer<TunnelCredentialObject>(TUNNEL_CREDENTIAL);
  const sync = tunnelCredentialSync({
    api,
    secrets: manager.resources<SecretObject>(SECRET),
    bots: manager.informer<BotUserObject>(BOT_USER),
  });
  const controller = { manager, kind: TUNNEL_CREDENTIAL, client, informer, sync };
  return manager.register<TunnelCredentialObject>({
    kind: TUNNEL_CREDENTIAL,
    references: (credential) =>
      credential.spec.ownerRef ? [{ kind: BOT_USER.kind, name: credential.spec.ownerRef.name }] : [],
    watches: [
      { kind: BOT_USER },
      {
        kind: SECRET,
        map: ownersOf(TUNNEL_CREDENTIAL),
        selectors: { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` },
      },
    ],
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
