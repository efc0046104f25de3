import { isConditionTrue } from '../runtime/conditions.js';
import type { Informer } from '../runtime/informer.js';
import type { BotUserObject } from './bot-user/sync.js';
import { BOT_USER } from './kinds.js';
import type { Resolution } from './managed-resource.js';

/** How a credential spec names its owner: a BotUser of the namespace, or a raw server id. */
export interface CredentialOwnerSpec {
  ownerRef?: { name: string } | undefined;
  ownerId?: string | undefined;
}

/**
 * The server id of a credential's owner: `ownerId` as written, the id of the BotUser `ownerRef`
 * names once it is Ready (the controller watches BotUsers, so no retry timer), or undefined (the
 * server then makes the caller, the operator, the owner).
 */
export function resolveCredentialOwner(
  bots: Informer<BotUserObject>,
  namespace: string | undefined,
  spec: CredentialOwnerSpec,
): Resolution<string | undefined> {
  const ownerRef = spec.ownerRef;
  if (!ownerRef) return { ready: true, value: spec.ownerId };
  const bot = bots.cache.get(namespace, ownerRef.name);
  if (!bot?.status?.id || !isConditionTrue(bot.status.conditions, 'Ready')) {
    return {
      ready: false,
      reason: 'ReferenceNotReady',
      message: `spec.ownerRef: BotUser ${ownerRef.name} is not Ready`,
    };
  }
  return { ready: true, value: bot.status.id };
}

/** The reference-index entry of a credential's owner (what the BotUser watch maps back from). */
export function credentialOwnerReferences(spec: CredentialOwnerSpec): { kind: string; name: string }[] {
  return spec.ownerRef ? [{ kind: BOT_USER.kind, name: spec.ownerRef.name }] : [];
}
