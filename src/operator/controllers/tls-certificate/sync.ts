import type { EdgewardClient } from '../../../client/index.js';
import type { TlsCertificate } from '../../../schemas/tls-certificates.js';
import type { TlsCertificateSpec, TlsCertificateStatus } from '../../crds/kinds/tls-certificate.js';
import type { ResourceClient } from '../../runtime/resource-client.js';
import {
  changedFields,
  type ManagedObject,
  type Resolution,
  type ResourceSync,
  TerminalSyncError,
} from '../managed-resource.js';
import { readSecretValues, type SecretObject, secretValue } from '../secret-values.js';
import { sameLeafCertificate, x509Status } from '../x509-fields.js';

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
  return { description: object.spec.description ?? '', metadata: object.spec.metadata ?? '' };
}

/**
 * TLSCertificate -> `/tls_certificates`. The private key comes from a Secret and goes to the server
 * once, in the create (the server never shows it again and certificate and key are immutable), so
 * the Secret is read only while there is nothing on the server yet; deleting it afterwards changes
 * nothing. An adopted certificate with another leaf than the spec is reported, never replaced.
 */
export function tlsCertificateSync(
  api: EdgewardClient,
  secrets: ResourceClient<SecretObject>,
): ResourceSync<TlsCertificateObject, ResolvedTlsCertificate, TlsCertificate> {
  return {
    async resolve(object): Promise<Resolution<ResolvedTlsCertificate>> {
      if (object.status?.id) return { ready: true, value: { privateKeyPem: undefined } };
      const read = await readSecretValues(secrets, object.metadata?.namespace, [
        { field: PRIVATE_KEY_FIELD, ref: object.spec.privateKeySecretRef },
      ]);
      if (!read.ready) return read;
      return { ready: true, value: { privateKeyPem: secretValue(read.value, PRIVATE_KEY_FIELD) } };
    },
    get: (id) => api.tlsCertificates.get(id),
    async create(object, resolved, options) {
      if (resolved.privateKeyPem === undefined) {
        throw new Error(`${PRIVATE_KEY_FIELD}: the private key was not read before the create`);
      }
      return api.tlsCertificates.create(
        {
          ...desiredFields(object),
          certificate_pem: object.spec.certificatePem,
          private_key_pem: resolved.privateKeyPem,
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
