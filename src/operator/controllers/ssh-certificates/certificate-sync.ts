import type { SshHostCertificate } from '../../../schemas/ssh-certificates.js';
import { parseRfc3339 } from '../../../schemas/ssh-certificates.js';
import type { SshCertificateStatus } from '../../crds/definitions/ssh-certificate-fields.js';
import type { SshHostCertificateSpec } from '../../crds/definitions/ssh-host-certificate.js';
import type { InformerReader } from '../../runtime/informer.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import type { ResourceKind } from '../../runtime/resource-types.js';
import {
  ADOPT_ANNOTATION,
  type ManagedObject,
  type Resolution,
  type ResourceSync,
} from '../managed/managed-resource.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import { changedFields } from '../shared/changed-fields.js';
import { describedFields } from '../shared/described-fields.js';
import { releaseOwnedSecret } from '../shared/owned-secrets.js';
import { type ReferencedObject, resolveReadyId } from '../shared/ready-references.js';
import type { SecretObject } from '../shared/secret-values.js';
import {
  type CertificateSecretState,
  readCertificateSecret,
  secretHolds,
  writeCertificateSecret,
} from './certificate-secret.js';
import { samePublicKey } from './public-key.js';

/** What host and user certificate objects share (a user certificate's spec has more fields). */
export type SshCertificateObject = ManagedObject & {
  spec: SshHostCertificateSpec;
  status?: SshCertificateStatus;
};

/** What `resolve` found: the signing CA's server id and the certificate Secret. */
export interface ResolvedCertificate {
  caId: string;
  secretName: string;
  secret: CertificateSecretState;
}

/** The one part host and user certificates do differently: their API and their extra fields. */
export interface CertificateVariant<T extends SshCertificateObject, Remote extends SshHostCertificate> {
  kind: ResourceKind;
  get(id: string): Promise<Remote>;
  /** Signs: the common request fields plus the variant's own. */
  create(object: T, request: CertificateRequest, options: { idempotencyKey: string }): Promise<Remote>;
  update(id: string, patch: { description?: string; metadata?: string }): Promise<Remote>;
  delete(id: string): Promise<void>;
  /** Why the variant's own signed fields differ from the spec's (user: options, extensions). */
  signedFieldsMismatch?(object: T, remote: Remote): string | undefined;
}

/** The body fields host and user certificate creates share. */
export interface CertificateRequest {
  description: string;
  metadata: string;
  ssh_certificate_authority_id: string;
  public_key: string;
  principals?: string[] | undefined;
  valid_after?: string | undefined;
  valid_until?: string | undefined;
}

export interface CertificateSyncDeps {
  secrets: KubeResources<SecretObject>;
  authorities: InformerReader<ReferencedObject>;
}

export function certificateSecretName(object: SshCertificateObject): string {
  return object.spec.certificateSecretName ?? `${object.metadata?.name}-certificate`;
}

function desiredFields(object: SshCertificateObject) {
  return describedFields(object.spec);
}

/** True while the CR is adopting a server certificate (annotation set, no id recorded yet). */
function adopting(object: SshCertificateObject): boolean {
  return !object.status?.id && object.metadata?.annotations?.[ADOPT_ANNOTATION] !== undefined;
}

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

/** Whether two RFC 3339 times name the same second (the server rewrites them in UTC). */
function sameInstant(spec: string, remote: string): boolean {
  const a = parseRfc3339(spec);
  const b = parseRfc3339(remote);
  return a !== undefined && b !== undefined && a.getTime() === b.getTime();
}

/**
 * Why the signed certificate is not the one the spec asks for, or undefined. These are the fields
 * inside the signature, which the server cannot update. A validity the spec leaves out is the
 * server's default at signing time, which any certificate already signed satisfies.
 */
export function certificateMismatch(
  object: SshCertificateObject,
  caId: string,
  remote: SshHostCertificate,
): string | undefined {
  const { spec } = object;
  if (remote.ssh_certificate_authority_id !== caId) {
    return `${remote.id} was signed by ${remote.ssh_certificate_authority_id}, not by ${caId}`;
  }
  if (!samePublicKey(spec.publicKey, remote.public_key)) return `${remote.id} certifies another public key`;
  if (!sameSet(spec.principals ?? [], remote.principals)) {
    return `spec.principals differ from those of ${remote.id}`;
  }
  if (spec.validAfter !== undefined && !sameInstant(spec.validAfter, remote.valid_after)) {
    return `spec.validAfter differs from ${remote.id}'s ${remote.valid_after}`;
  }
  if (spec.validUntil !== undefined && !sameInstant(spec.validUntil, remote.valid_until)) {
    return `spec.validUntil differs from ${remote.id}'s ${remote.valid_until}`;
  }
  return undefined;
}

/** The share of a server-chosen validity after which a certificate is renewed (cert-manager's 2/3). */
const RENEW_AFTER_SHARE = 2 / 3;

/**
 * Why a certificate whose validity the server chose (no spec.validUntil) must be renewed now: two
 * thirds of its lifetime have passed, so the Secret never holds an expired certificate (user
 * certificates default to 24 hours). Asked at every reconcile; the periodic resync bounds how late
 * after that point it happens. A validity the spec fixes is never renewed: it would sign the same
 * window again.
 */
export function renewalDue(
  spec: { validUntil?: string | undefined },
  remote: { id: string; created_at: string; valid_after: string; valid_until: string },
  now: number = Date.now(),
): string | undefined {
  if (spec.validUntil !== undefined) return undefined;
  // From its signing, not from a validAfter the spec put in the past: a renewal signs a window of
  // the same shape, which would otherwise be due again at once.
  const start = Math.max(Date.parse(remote.valid_after), Date.parse(remote.created_at));
  const end = Date.parse(remote.valid_until);
  if (!(end > start)) return undefined;
  const renewAt = start + (end - start) * RENEW_AFTER_SHARE;
  return now >= renewAt ? `${remote.id} expires at ${remote.valid_until}: renewing it` : undefined;
}

/**
 * SSHHostCertificate / SSHUserCertificate -> `/ssh_{host,user}_certificates`, with the signed
 * certificate in a Secret the CR owns.
 *
 * A certificate is signed once: the server updates only its description and metadata. A spec
 * asking for other signed content (principals, validity, options, extensions, or a CA that was
 * recreated with a new key) is met by `needsReplacement`: a new certificate is signed, written to
 * the Secret, and only then the old one deleted. The certificate is public and the server keeps
 * it, so unlike a token it is never lost: a deleted or edited Secret is rewritten from the
 * server's copy (in `update`), with no new signature. A foreign Secret of that name is refused in
 * `resolve`, before anything is signed. An adopted certificate whose signed content differs from
 * the spec is InvalidSpec, not replaced: adoption is asked to take that certificate as it is.
 * A certificate whose validity the server chose is renewed the same way (`renewalDue`).
 */
export function sshCertificateSync<T extends SshCertificateObject, Remote extends SshHostCertificate>(
  deps: CertificateSyncDeps,
  variant: CertificateVariant<T, Remote>,
): ResourceSync<T, ResolvedCertificate, Remote> {
  const { secrets, authorities } = deps;
  const mismatch = (object: T, resolved: ResolvedCertificate, remote: Remote) =>
    certificateMismatch(object, resolved.caId, remote) ?? variant.signedFieldsMismatch?.(object, remote);
  return {
    async resolve(object): Promise<Resolution<ResolvedCertificate>> {
      let caId = object.spec.sshCertificateAuthorityId;
      const caRef = object.spec.sshCertificateAuthorityRef;
      if (caRef) {
        const ca = resolveReadyId(
          authorities,
          object.metadata?.namespace,
          caRef,
          'spec.sshCertificateAuthorityRef',
          'SSHCertificateAuthority',
        );
        if (!ca.ready) return ca;
        caId = ca.value;
      }
      if (!caId) {
        // CEL requires exactly one of the two; this only guards a CRD installed without it.
        throw new TerminalSyncError(
          'InvalidSpec',
          'spec: one of sshCertificateAuthorityRef and sshCertificateAuthorityId is required',
        );
      }
      const secretName = certificateSecretName(object);
      const secret = await readCertificateSecret(secrets, object, secretName);
      if (secret.state === 'foreign') {
        return {
          ready: false,
          reason: 'SecretConflict',
          message: `spec.certificateSecretName: Secret ${secretName} exists and is not owned by this ${variant.kind.kind}`,
          retryAfterMs: 60_000,
        };
      }
      return { ready: true, value: { caId, secretName, secret } };
    },
    get: (id) => variant.get(id),
    create: (object, resolved, options) =>
      variant.create(
        object,
        {
          ...desiredFields(object),
          ssh_certificate_authority_id: resolved.caId,
          public_key: object.spec.publicKey,
          principals: object.spec.principals,
          valid_after: object.spec.validAfter,
          valid_until: object.spec.validUntil,
        },
        options,
      ),
    afterCreate: (object, remote) =>
      writeCertificateSecret(secrets, object, variant.kind, certificateSecretName(object), remote),
    // The certificate stays on the server: so does its Secret, which workloads mount.
    orphan: (object) => releaseOwnedSecret(secrets, object, certificateSecretName(object)),
    needsReplacement: (object, resolved, remote) =>
      mismatch(object, resolved, remote) ?? renewalDue(object.spec, remote),
    async update(object, resolved, remote) {
      // Only an adoption gets here with a mismatch: otherwise needsReplacement has re-signed.
      const differs = mismatch(object, resolved, remote);
      if (differs && adopting(object)) {
        throw new TerminalSyncError(
          'InvalidSpec',
          `${differs}; an adopted certificate is taken as signed: match the spec to it, or remove ${ADOPT_ANNOTATION} to sign a new one`,
        );
      }
      let changed = false;
      if (!secretHolds(resolved.secret, remote)) {
        await writeCertificateSecret(secrets, object, variant.kind, resolved.secretName, remote);
        changed = true;
      }
      const patch = changedFields(desiredFields(object), remote);
      if (Object.keys(patch).length === 0) return { remote, changed };
      return { remote: await variant.update(remote.id, patch), changed: true };
    },
    delete: (id) => variant.delete(id),
    statusFields: (_object, remote, resolved) => ({
      keyType: remote.key_type,
      validAfter: remote.valid_after,
      validUntil: remote.valid_until,
      certificateSecretName: resolved.secretName,
    }),
  };
}
