import type { EdgewardClient } from '../../../client/index.js';
import type { SshCredential } from '../../../schemas/ssh-credentials.js';
import type { SshCredentialSpec, SshCredentialStatus } from '../../crds/definitions/ssh-credential.js';
import type { InformerReader } from '../../runtime/informer.js';
import type { BotUserObject } from '../bot-user/sync.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import { changedFields } from '../shared/changed-fields.js';
import { resolveCredentialOwner } from '../shared/credential-owner.js';
import { describedFields } from '../shared/described-fields.js';
import { samePublicKey } from '../ssh-certificates/public-key.js';

export type SshCredentialObject = ManagedObject & { spec: SshCredentialSpec; status?: SshCredentialStatus };

/** What `resolve` found: the owner's server id, when the spec names one. */
export interface ResolvedSshCredential {
  ownerId: string | undefined;
}

function desiredFields(object: SshCredentialObject) {
  return {
    ...describedFields(object.spec),
    acl: object.spec.acl ?? [],
  };
}

/**
 * SSHCredential -> `/ssh_credentials`. Unlike a TunnelCredential there is no secret to keep: the
 * agent holds the private key, the server only its public half. The public key and the owner are
 * fixed at creation (CEL on the object; the server's PATCH takes neither), so an adopted
 * credential with another key or owner is InvalidSpec rather than silently replaced: agents
 * authenticate with that very key.
 */
export function sshCredentialSync(deps: {
  api: EdgewardClient;
  bots: InformerReader<BotUserObject>;
}): ResourceSync<SshCredentialObject, ResolvedSshCredential, SshCredential> {
  const { api, bots } = deps;
  return {
    async resolve(object) {
      const owner = resolveCredentialOwner(bots, object.metadata?.namespace, object.spec);
      return owner.ready ? { ready: true, value: { ownerId: owner.value } } : owner;
    },
    get: (id) => api.sshCredentials.get(id),
    create: (object, resolved, options) =>
      api.sshCredentials.create(
        { ...desiredFields(object), public_key: object.spec.publicKey, owner_id: resolved.ownerId },
        options,
      ),
    async update(object, resolved, remote) {
      if (!samePublicKey(object.spec.publicKey, remote.public_key)) {
        throw new TerminalSyncError(
          'InvalidSpec',
          `spec.publicKey: ${remote.id} holds another public key; create a new credential for a new key`,
        );
      }
      if (resolved.ownerId && resolved.ownerId !== remote.owner_id) {
        throw new TerminalSyncError(
          'InvalidSpec',
          `spec.ownerId: ${remote.id} is owned by ${remote.owner_id}; the owner is fixed at creation`,
        );
      }
      const patch = changedFields(desiredFields(object), remote);
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.sshCredentials.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.sshCredentials.delete(id),
    statusFields: (_object, remote) => ({ ownerId: remote.owner_id }),
  };
}
