import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { Credential } from '../../../schemas/credentials.js';
import type { TunnelCredentialSpec, TunnelCredentialStatus } from '../../crds/kinds/tunnel-credential.js';
import { isNotFound } from '../../runtime/api-errors.js';
import { isConditionTrue } from '../../runtime/conditions.js';
import type { Informer } from '../../runtime/informer.js';
import type { ResourceClient } from '../../runtime/resource-client.js';
import { controllerReference } from '../../runtime/watch-mappers.js';
import type { BotUserObject } from '../bot-user/sync.js';
import { TUNNEL_CREDENTIAL } from '../kinds.js';
import {
  changedFields,
  type ManagedObject,
  type Resolution,
  type ResourceSync,
  TerminalSyncError,
} from '../managed-resource.js';

export type TunnelCredentialObject = ManagedObject & {
  spec: TunnelCredentialSpec;
  status?: TunnelCredentialStatus;
};

export interface SecretObject extends KubernetesObject {
  type?: string;
  data?: Record<string, string>;
}

/** What `resolve` found: the owner's server id (when one is named) and the token Secret's name. */
export interface ResolvedCredential {
  ownerId: string | undefined;
  secretName: string;
}

export const TOKEN_KEY = 'token';
/** Put on every Secret the operator writes, so its Secret informer watches only those. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'edgeward-operator';

export function tokenSecretName(object: TunnelCredentialObject): string {
  return object.spec.tokenSecretName ?? `${object.metadata?.name}-token`;
}

function ownedBy(secret: KubernetesObject, owner: KubernetesObject): boolean {
  return (secret.metadata?.ownerReferences ?? []).some((ref) => ref.uid === owner.metadata?.uid);
}

function desiredFields(object: TunnelCredentialObject) {
  return {
    description: object.spec.description ?? '',
    metadata: object.spec.metadata ?? '',
    acl: object.spec.acl ?? [],
  };
}

export interface TunnelCredentialDeps {
  api: EdgewardClient;
  secrets: ResourceClient<SecretObject>;
  bots: Informer<BotUserObject>;
}

/**
 * TunnelCredential -> `/credentials`, with the authtoken in a Secret the CR owns.
 *
 * The token is in the create response only, so it must never be lost: the Secret is written
 * after the create and before the status (which records the id). If the Secret write fails, or
 * the operator dies in between, status.id stays empty, the next reconcile creates again with the
 * same Idempotency-Key (`<uid>-<generation>`), and the server replays the original response —
 * the same credential and the same token — instead of making a second credential. A foreign
 * Secret of that name is refused before the create (SecretConflict), so a conflict never strands
 * a credential whose token has nowhere to go.
 */
export function tunnelCredentialSync(
  deps: TunnelCredentialDeps,
): ResourceSync<TunnelCredentialObject, ResolvedCredential, Credential> {
  const { api, secrets, bots } = deps;
  return {
    async resolve(object): Promise<Resolution<ResolvedCredential>> {
      const namespace = object.metadata?.namespace;
      let ownerId = object.spec.ownerId;
      const ownerRef = object.spec.ownerRef;
      if (ownerRef) {
        const bot = bots.cache.get(namespace, ownerRef.name);
        if (!bot?.status?.id || !isConditionTrue(bot.status.conditions, 'Ready')) {
          return {
            ready: false,
            reason: 'ReferenceNotReady',
            message: `spec.ownerRef: BotUser ${ownerRef.name} is not Ready`,
          };
        }
        ownerId = bot.status.id;
      }
      const secretName = tokenSecretName(object);
      try {
        const secret = await secrets.get(namespace, secretName);
        if (!ownedBy(secret, object)) {
          return {
            ready: false,
            reason: 'SecretConflict',
            message: `spec.tokenSecretName: Secret ${secretName} exists and is not owned by this TunnelCredential`,
            retryAfterMs: 60_000,
          };
        }
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      return { ready: true, value: { ownerId, secretName } };
    },
    get: (id) => api.credentials.get(id),
    create: (object, resolved, options) =>
      api.credentials.create({ ...desiredFields(object), owner_id: resolved.ownerId }, options),
    async afterCreate(object, remote) {
      if (!remote.token) {
        throw new TerminalSyncError('TokenUnavailable', `the server returned no token for ${remote.id}`);
      }
      await writeTokenSecret(secrets, object, tokenSecretName(object), remote.token);
    },
    async update(object, resolved, remote) {
      if (resolved.ownerId && resolved.ownerId !== remote.owner_id) {
        throw new TerminalSyncError(
          'InvalidSpec',
          `spec.ownerId: ${remote.id} is owned by ${remote.owner_id}; the owner is fixed at creation`,
        );
      }
      const patch = changedFields(desiredFields(object), remote);
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.credentials.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.credentials.delete(id),
    statusFields: (_object, remote, resolved) => ({
      ownerId: remote.owner_id,
      tokenSecretName: resolved.secretName,
    }),
  };
}

/** Creates the Secret, or replaces the data of the one this CR already owns. */
async function writeTokenSecret(
  secrets: ResourceClient<SecretObject>,
  owner: TunnelCredentialObject,
  name: string,
  token: string,
): Promise<void> {
  const namespace = owner.metadata?.namespace;
  const secret: SecretObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
      ownerReferences: [controllerReference(owner, TUNNEL_CREDENTIAL)],
    },
    type: 'Opaque',
    data: { [TOKEN_KEY]: Buffer.from(token, 'utf8').toString('base64') },
  };
  let existing: SecretObject | undefined;
  try {
    existing = await secrets.get(namespace, name);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  if (!existing) {
    await secrets.create(secret);
    return;
  }
  if (!ownedBy(existing, owner)) {
    throw new TerminalSyncError(
      'SecretConflict',
      `Secret ${name} appeared and is not owned by this TunnelCredential`,
    );
  }
  const labels = { ...existing.metadata?.labels, [MANAGED_BY_LABEL]: MANAGED_BY };
  await secrets.replace({ ...existing, metadata: { ...existing.metadata, labels }, data: secret.data });
}
