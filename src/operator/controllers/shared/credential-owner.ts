import type { InformerReader } from '../../runtime/informer.js';
import type { Resolution } from '../managed/managed-resource.js';
import { BOT_USER } from '../resource-types.js';
import { type ReferencedObject, resolveReadyId } from './ready-references.js';

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
  bots: InformerReader<ReferencedObject>,
  namespace: string | undefined,
  spec: CredentialOwnerSpec,
): Resolution<string | undefined> {
  if (!spec.ownerRef) return { ready: true, value: spec.ownerId };
  return resolveReadyId(bots, namespace, spec.ownerRef, 'spec.ownerRef', BOT_USER.kind);
}

/** The reference-index entry of a credential's owner (what the BotUser watch maps back from). */
export function credentialOwnerReferences(spec: CredentialOwnerSpec): { kind: string; name: string }[] {
  return spec.ownerRef ? [{ kind: BOT_USER.kind, name: spec.ownerRef.name }] : [];
}
