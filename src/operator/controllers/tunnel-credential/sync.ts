import { createHash } from 'node:crypto';
import type { EdgewardClient } from '../../../client/index.js';
import type { Credential } from '../../../schemas/credentials.js';
import type {
  TunnelCredentialSpec,
  TunnelCredentialStatus,
} from '../../crds/definitions/tunnel-credential.js';
import { getIfExists } from '../../runtime/get-if-exists.js';
import type { InformerReader } from '../../runtime/informer.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import type { BotUserObject } from '../bot-user/sync.js';
import {
  ADOPT_ANNOTATION,
  type ManagedObject,
  type Resolution,
  type ResourceSync,
} from '../managed/managed-resource.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import { TUNNEL_CREDENTIAL } from '../resource-types.js';
import { changedFields } from '../shared/changed-fields.js';
import { resolveCredentialOwner } from '../shared/credential-owner.js';
import { describedFields } from '../shared/described-fields.js';
import {
  ownedBy,
  ownedSecretMetadata,
  releaseOwnedSecret,
  writeOwnedSecret,
} from '../shared/owned-secrets.js';
import type { SecretObject } from '../shared/secret-values.js';

export type TunnelCredentialObject = ManagedObject & {
  spec: TunnelCredentialSpec;
  status?: TunnelCredentialStatus;
};

/** What the token Secret holds, as far as the credential it belongs to is concerned. */
export type TokenSecretState =
  | { state: 'missing' }
  /** The user's own Secret with the token of a credential being adopted: taken over by `update`. */
  | { state: 'adoptable'; secret: SecretObject; token: string }
  | { state: 'owned'; secret: SecretObject; credentialId: string | undefined; tokenIntact: boolean }
  /** spec.tokenSecretName changed: the intact token of status.id is in the old Secret, to move. */
  | { state: 'movable'; token: string };

/** What `resolve` found: the owner's server id (when one is named) and the token Secret. */
export interface ResolvedCredential {
  ownerId: string | undefined;
  secretName: string;
  secret: TokenSecretState;
}

export const TOKEN_KEY = 'token';
/** On the token Secret: which credential its token belongs to, and the token's SHA-256. */
export const CREDENTIAL_ID_ANNOTATION = 'edgeward.dev/credential-id';
export const TOKEN_SHA256_ANNOTATION = 'edgeward.dev/token-sha256';
export function tokenSecretName(object: TunnelCredentialObject): string {
  return object.spec.tokenSecretName ?? `${object.metadata?.name}-token`;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

function tokenIn(secret: SecretObject): string {
  const encoded = secret.data?.[TOKEN_KEY];
  return encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
}

/** True while the CR is adopting a server credential (annotation set, no id recorded yet). */
function adopting(object: TunnelCredentialObject): boolean {
  return !object.status?.id && object.metadata?.annotations?.[ADOPT_ANNOTATION] !== undefined;
}

function desiredFields(object: TunnelCredentialObject) {
  return {
    ...describedFields(object.spec),
    acl: object.spec.acl ?? [],
  };
}

export interface TunnelCredentialDeps {
  api: EdgewardClient;
  secrets: KubeResources<SecretObject>;
  bots: InformerReader<BotUserObject>;
}

/**
 * TunnelCredential -> `/credentials`, with the authtoken in a Secret the CR owns.
 *
 * The token is in the create response only, so it must never be lost: the Secret is written
 * after the create and before the status records the id. If the operator dies in between,
 * status.id stays empty, the next reconcile creates again with the same Idempotency-Key
 * (`<uid>`), and the server replays the original response — the same credential
 * and the same token — instead of making a second credential. If the Secret write itself fails,
 * the id is recorded with the failure (so deleting the CR deletes the credential) and the next
 * reconcile replaces the credential as for a lost Secret (below). A foreign Secret of that name
 * is refused before the create (SecretConflict), so a conflict never strands a credential whose
 * token has nowhere to go.
 *
 * The Secret records which credential its token belongs to and the token's SHA-256. If it is
 * deleted, emptied or edited, the token cannot be recovered from the server, so the credential is
 * replaced: a new one is created (Idempotency-Key `<uid>-replaces-<old id>`), its
 * token written, then the old credential deleted — a crash at any step replays the same new
 * credential, and a Secret naming another credential than status.id is the mark of such an
 * unfinished replacement. Adoption (`edgeward.dev/adopt-id`) cannot learn the token either: it
 * needs the user's own Secret holding it, which the CR then takes over (data untouched);
 * without one the CR waits with TokenUnavailable rather than replace what it was asked to adopt.
 * A new spec.tokenSecretName copies the token to the new Secret (the old one goes with the CR);
 * deletionPolicy Orphan leaves the Secret behind, released, with the credential.
 */
export function tunnelCredentialSync(
  deps: TunnelCredentialDeps,
): ResourceSync<TunnelCredentialObject, ResolvedCredential, Credential> {
  const { api, secrets, bots } = deps;
  return {
    async resolve(object): Promise<Resolution<ResolvedCredential>> {
      const namespace = object.metadata?.namespace;
      const owner = resolveCredentialOwner(bots, namespace, object.spec);
      if (!owner.ready) return owner;
      const ownerId = owner.value;
      const secretName = tokenSecretName(object);
      const secret = await getIfExists(secrets, namespace, secretName);
      let state = tokenSecretState(object, secret);
      if (!secret) state = (await movableToken(secrets, object, secretName)) ?? state;
      if (adopting(object) && state.state !== 'adoptable' && state.state !== 'owned') {
        // The server shows a token only in the create response: an adopted credential's token must
        // come from whoever has it. Nothing is created or replaced meanwhile.
        return {
          ready: false,
          reason: 'TokenUnavailable',
          message:
            `${ADOPT_ANNOTATION}: the server never shows a credential's token again; put the token of ` +
            `${object.metadata?.annotations?.[ADOPT_ANNOTATION]} in Secret ${secretName} (key ${TOKEN_KEY}), ` +
            'or remove the annotation to have a new credential created',
          retryAfterMs: 60_000,
        };
      }
      if (secret && state.state === 'missing') {
        return {
          ready: false,
          reason: 'SecretConflict',
          message: `spec.tokenSecretName: Secret ${secretName} exists and is not owned by this TunnelCredential`,
          retryAfterMs: 60_000,
        };
      }
      return { ready: true, value: { ownerId, secretName, secret: state } };
    },
    get: (id) => api.credentials.get(id),
    create: (object, resolved, options) =>
      api.credentials.create({ ...desiredFields(object), owner_id: resolved.ownerId }, options),
    async afterCreate(object, remote) {
      if (!remote.token) {
        throw new TerminalSyncError('TokenUnavailable', `the server returned no token for ${remote.id}`);
      }
      await writeTokenSecret(secrets, object, tokenSecretName(object), remote.id, remote.token);
    },
    needsReplacement(_object, resolved, remote) {
      const { secret, secretName } = resolved;
      if (secret.state === 'missing')
        return `Secret ${secretName} is gone and with it the only copy of the token`;
      if (secret.state !== 'owned') return undefined;
      if (secret.credentialId !== remote.id) {
        // Also the mark of a replacement interrupted after its Secret write: finishing it replays
        // the same new credential (same Idempotency-Key) and deletes the old one.
        return `Secret ${secretName} holds the token of ${secret.credentialId ?? 'an unknown credential'}, not of ${remote.id}`;
      }
      if (!secret.tokenIntact) return `the token in Secret ${secretName} was changed or removed`;
      return undefined;
    },
    async update(object, resolved, remote) {
      // Before touching any Secret: a failed adoption must not have taken the user's Secret over.
      if (resolved.ownerId && resolved.ownerId !== remote.owner_id) {
        throw new TerminalSyncError(
          'InvalidSpec',
          `spec.ownerId: ${remote.id} is owned by ${remote.owner_id}; the owner is fixed at creation`,
        );
      }
      const { secret } = resolved;
      if (secret.state === 'adoptable') {
        await takeOverTokenSecret(secrets, object, secret.secret, remote.id, secret.token);
      } else if (secret.state === 'movable') {
        // The token moves to the new name (same credential, agents keep working). The old Secret
        // stays owned by the CR and goes with it: the operator has no right to delete Secrets
        // (least privilege), and whoever renamed it may delete it sooner.
        await writeTokenSecret(secrets, object, resolved.secretName, remote.id, secret.token);
      }
      const patch = changedFields(desiredFields(object), remote);
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.credentials.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.credentials.delete(id),
    // The credential stays on the server: so must its token, which garbage collection would
    // delete with the CR if the Secret were still owned.
    orphan: (object) =>
      releaseOwnedSecret(secrets, object, object.status?.tokenSecretName ?? tokenSecretName(object)),
    statusFields: (_object, remote, resolved) => ({
      ownerId: remote.owner_id,
      tokenSecretName: resolved.secretName,
    }),
  };
}

/** Classifies the Secret found under the token Secret's name ('missing' + a Secret = foreign). */
function tokenSecretState(
  object: TunnelCredentialObject,
  secret: SecretObject | undefined,
): TokenSecretState {
  if (!secret) return { state: 'missing' };
  const token = tokenIn(secret);
  if (ownedBy(secret, object)) {
    const annotations = secret.metadata?.annotations ?? {};
    return {
      state: 'owned',
      secret,
      credentialId: annotations[CREDENTIAL_ID_ANNOTATION],
      tokenIntact: token !== '' && annotations[TOKEN_SHA256_ANNOTATION] === sha256(token),
    };
  }
  if (adopting(object) && token !== '') return { state: 'adoptable', secret, token };
  return { state: 'missing' };
}

/** The old Secret, when spec.tokenSecretName changed and it holds the intact token of status.id. */
async function movableToken(
  secrets: KubeResources<SecretObject>,
  object: TunnelCredentialObject,
  newName: string,
): Promise<TokenSecretState | undefined> {
  const oldName = object.status?.tokenSecretName;
  const id = object.status?.id;
  if (!oldName || !id || oldName === newName) return undefined;
  const old = await getIfExists(
    secrets,
    object.metadata?.namespace,
    oldName,
    `reading the previous token Secret ${oldName}`,
  );
  if (!old) return undefined;
  const state = tokenSecretState(object, old);
  if (state.state !== 'owned' || state.credentialId !== id || !state.tokenIntact) return undefined;
  return { state: 'movable', token: tokenIn(old) };
}

/** On the token Secret: the credential its token belongs to and the token's SHA-256. */
function tokenAnnotations(credentialId: string, token: string): Record<string, string> {
  return { [CREDENTIAL_ID_ANNOTATION]: credentialId, [TOKEN_SHA256_ANNOTATION]: sha256(token) };
}

/** Adopting: the user's Secret with the adopted credential's token becomes the CR's; data untouched. */
async function takeOverTokenSecret(
  secrets: KubeResources<SecretObject>,
  owner: TunnelCredentialObject,
  secret: SecretObject,
  credentialId: string,
  token: string,
): Promise<void> {
  const wanted = ownedSecretMetadata(owner, TUNNEL_CREDENTIAL, tokenAnnotations(credentialId, token));
  await secrets.replace({
    ...secret,
    metadata: {
      ...secret.metadata,
      labels: { ...secret.metadata?.labels, ...wanted.labels },
      annotations: { ...secret.metadata?.annotations, ...wanted.annotations },
      ownerReferences: [...(secret.metadata?.ownerReferences ?? []), ...wanted.ownerReferences],
    },
  });
}

/** Creates the token Secret, or replaces the data of the one this CR already owns. */
async function writeTokenSecret(
  secrets: KubeResources<SecretObject>,
  owner: TunnelCredentialObject,
  name: string,
  credentialId: string,
  token: string,
): Promise<void> {
  await writeOwnedSecret(secrets, owner, TUNNEL_CREDENTIAL, name, {
    annotations: tokenAnnotations(credentialId, token),
    data: { [TOKEN_KEY]: Buffer.from(token, 'utf8').toString('base64') },
  });
}
