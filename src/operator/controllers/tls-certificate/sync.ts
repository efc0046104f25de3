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
import { sameLeafCertificate, x509Status } from '../shared/x509-fields.js';

export type TlsCertificateObject = ManagedObject & {
  spec: TlsCertificateSpec;
  status?: TlsCertificateStatus;
};

const PRIVATE_KEY_FIELD = 'spec.privateKeySecretRef';

/** The private key PEM, read only when a create needs it. */
export interface ResolvedTlsCertificate {
  privateKeyPem: string | undefined;
}

function desiredFields(object: TlsCertificateObject) {
  return describedFields(object.spec);
}

/**
 * TLSCertificate -> `/tls_certificates`. The private key comes from a Secret and goes to the server
 * once, in the create (the server never shows it again and certificate and key are immutable), so
 * the Secret is read only while there is nothing on the server yet (or to recreate one deleted on
 * the server); deleting it afterwards changes nothing, and adoption needs none. An adopted
 * certificate with another leaf than the spec is reported, never replaced.
 */
export function tlsCertificateSync(
  api: EdgewardClient,
  secrets: KubeResources<SecretObject>,
): ResourceSync<TlsCertificateObject, ResolvedTlsCertificate, TlsCertificate> {
  async function readPrivateKey(object: TlsCertificateObject): Promise<Resolution<string>> {
    const read = await readSecretValues(secrets, object.metadata?.namespace, [
      { field: PRIVATE_KEY_FIELD, ref: object.spec.privateKeySecretRef },
    ]);
    return read.ready ? { ready: true, value: secretValue(read.value, PRIVATE_KEY_FIELD) } : read;
  }

  return {
    async resolve(object): Promise<Resolution<ResolvedTlsCertificate>> {
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
          certificate_pem: object.spec.certificatePem,
          private_key_pem: privateKeyPem,
        },
        options,
      );
    },
    async update(object, _resolved, remote) {
      if (!sameLeafCertificate(object.spec.certificatePem, remote.certificate_pem)) {
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
