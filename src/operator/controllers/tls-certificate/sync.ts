import type { EdgewardClient } from '../../../client/index.js';
import type { TlsCertificate } from '../../../schemas/tls-certificates.js';
import type { TlsCertificateSpec, TlsCertificateStatus } from '../../crds/definitions/tls-certificate.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import {
  ADOPT_ANNOTATION,
  type ManagedObject,
  type Resolution,
  type ResourceSync,
} from '../managed/managed-resource.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import { changedFields } from '../shared/changed-fields.js';
import { describedFields } from '../shared/described-fields.js';
import { readSecretValues, type SecretObject, secretValue } from '../shared/secret-values.js';
import { readTlsSecretCertificate, type SecretCertificate } from '../shared/tls-secret-certificate.js';
import { sameLeafCertificate, x509Status } from '../shared/x509-fields.js';
import { renewalOf, secretMismatch } from './secret-renewal.js';

export type TlsCertificateObject = ManagedObject & {
  spec: TlsCertificateSpec;
  status?: TlsCertificateStatus;
};

const PRIVATE_KEY_FIELD = 'spec.privateKeySecretRef';
const SECRET_FIELD = 'spec.secretRef';

/**
 * What a create needs. Inline form: the private key PEM, read only when a create needs it. Secret
 * form (`secretRef`): the certificate and key the Secret holds now, read at every reconcile.
 */
export interface ResolvedTlsCertificate {
  privateKeyPem: string | undefined;
  fromSecret?: SecretCertificate;
}

function desiredFields(object: TlsCertificateObject) {
  return describedFields(object.spec);
}

/**
 * TLSCertificate -> `/tls_certificates`, in two forms.
 *
 * Inline (`certificatePem` + `privateKeySecretRef`): the key goes to the server once, in the create
 * (the server never shows it again and certificate and key are immutable), so its Secret is read
 * only while there is nothing on the server yet (or to recreate one deleted on the server);
 * deleting it afterwards changes nothing, and adoption needs none. An adopted certificate with
 * another leaf than the spec is reported, never replaced.
 *
 * From a Secret (`secretRef`, e.g. cert-manager's): the Secret is read at every reconcile (its
 * changes reconcile the object through the Secret watch). The API has no update of a certificate,
 * so when the Secret holds another chain than the server's (a renewal) the certificate is
 * *replaced*: the new one uploaded (Idempotency-Key `<uid>-replaces-<old id>`), then the old one
 * deleted, then status points at the new one (managed/apply.ts). Nothing in the API refers to a
 * certificate by id (edges pick the certificate whose names cover the SNI), so there is nothing to
 * re-point; for the moment both exist an edge may serve either (both valid), then only the new.
 * A crash anywhere in between replays the same upload at the next reconcile and deletes the old
 * one: never two left behind. A Secret gone or unusable keeps the certificate in force on the
 * server and says so (Ready False, `SecretNotFound` or `InvalidSecret`).
 */
export function tlsCertificateSync(
  api: EdgewardClient,
  secrets: KubeResources<SecretObject>,
): ResourceSync<TlsCertificateObject, ResolvedTlsCertificate, TlsCertificate> {
  async function readPrivateKey(object: TlsCertificateObject): Promise<Resolution<string>> {
    const ref = object.spec.privateKeySecretRef;
    if (!ref)
      throw new TerminalSyncError('InvalidSpec', `${PRIVATE_KEY_FIELD}: required with certificatePem`);
    const read = await readSecretValues(secrets, object.metadata?.namespace, [
      { field: PRIVATE_KEY_FIELD, ref },
    ]);
    return read.ready ? { ready: true, value: secretValue(read.value, PRIVATE_KEY_FIELD) } : read;
  }

  async function readFromSecret(
    object: TlsCertificateObject,
    secretName: string,
  ): Promise<Resolution<ResolvedTlsCertificate>> {
    const read = await readTlsSecretCertificate(
      secrets,
      object.metadata?.namespace,
      secretName,
      SECRET_FIELD,
    );
    if (read.ready) return { ready: true, value: { privateKeyPem: undefined, fromSecret: read.value } };
    // The certificate already uploaded stays in force; say which.
    const inForce = object.status?.id;
    return inForce
      ? { ...read, message: `${read.message}; the server keeps serving ${inForce}, the certificate in force` }
      : read;
  }

  return {
    async resolve(object): Promise<Resolution<ResolvedTlsCertificate>> {
      const secretName = object.spec.secretRef?.name;
      if (secretName !== undefined) return readFromSecret(object, secretName);
      // Something is (or is to be adopted) on the server: no key needed unless it must be recreated.
      if (object.status?.id || object.metadata?.annotations?.[ADOPT_ANNOTATION]) {
        return { ready: true, value: { privateKeyPem: undefined } };
      }
      const read = await readPrivateKey(object);
      if (!read.ready) return read;
      return { ready: true, value: { privateKeyPem: read.value } };
    },
    get: (id) => api.tlsCertificates.get(id),
    async create(object, resolved, options) {
      if (resolved.fromSecret) {
        // The same Secret contents make the same body, so a retry replays the same upload.
        return api.tlsCertificates.create(
          {
            ...desiredFields(object),
            certificate_pem: resolved.fromSecret.chainPem,
            private_key_pem: resolved.fromSecret.privateKeyPem,
          },
          options,
        );
      }
      let privateKeyPem = resolved.privateKeyPem;
      if (privateKeyPem === undefined) {
        // Recreating one deleted on the server: the key is read now. Missing, it is reported (not
        // retried with backoff): the Secret watch brings the certificate back when it appears.
        const read = await readPrivateKey(object);
        if (!read.ready) throw new TerminalSyncError(read.reason, read.message);
        privateKeyPem = read.value;
      }
      return api.tlsCertificates.create(
        {
          ...desiredFields(object),
          certificate_pem: object.spec.certificatePem ?? '',
          private_key_pem: privateKeyPem,
        },
        options,
      );
    },
    needsReplacement: (_object, resolved, remote) =>
      resolved.fromSecret ? renewalOf(resolved.fromSecret, remote) : undefined,
    async update(object, resolved, remote) {
      if (resolved.fromSecret) {
        // Reached with another chain only for a resource not replaced: an adopted one, or one a
        // lost create made before the Secret changed (replaced by the next reconcile).
        const mismatch = secretMismatch(object, resolved.fromSecret, remote);
        if (mismatch) throw mismatch;
      } else if (!sameLeafCertificate(object.spec.certificatePem ?? '', remote.certificate_pem)) {
        throw new TerminalSyncError(
          'InvalidSpec',
          `spec.certificatePem: ${remote.id} holds another certificate; an uploaded certificate cannot change`,
        );
      }
      const patch = changedFields(desiredFields(object), remote);
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.tlsCertificates.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.tlsCertificates.delete(id),
    statusFields: (_object, remote) => ({
      ...x509Status(remote),
      subjectAlternativeNames: {
        dnsNames: remote.subject_alternative_names.dns_names,
        ips: remote.subject_alternative_names.ips,
      },
      issuerCommonName: remote.issuer_common_name,
      serialNumber: remote.serial_number,
      privateKeyType: remote.private_key_type,
    }),
  };
}
