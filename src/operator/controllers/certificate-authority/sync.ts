import type { EdgewardClient } from '../../../client/index.js';
import type { CertificateAuthority } from '../../../schemas/certificate-authorities.js';
import type {
  CertificateAuthoritySpec,
  CertificateAuthorityStatus,
} from '../../crds/definitions/certificate-authority.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import { changedFields } from '../shared/changed-fields.js';
import { describedFields } from '../shared/described-fields.js';
import { sameLeafCertificate, x509Status } from '../shared/x509-fields.js';

export type CertificateAuthorityObject = ManagedObject & {
  spec: CertificateAuthoritySpec;
  status?: CertificateAuthorityStatus;
};

function desiredFields(object: CertificateAuthorityObject) {
  return describedFields(object.spec);
}

/**
 * CertificateAuthority -> `/certificate_authorities`. The certificate is immutable (CEL on the
 * object; the server takes description and metadata only on update), so an adopted CA holding
 * another certificate than the spec is reported, never "fixed" by replacing it.
 */
export function certificateAuthoritySync(
  api: EdgewardClient,
): ResourceSync<CertificateAuthorityObject, undefined, CertificateAuthority> {
  return {
    resolve: async () => ({ ready: true, value: undefined }),
    get: (id) => api.certificateAuthorities.get(id),
    create: (object, _resolved, options) =>
      api.certificateAuthorities.create({ ...desiredFields(object), ca_pem: object.spec.caPem }, options),
    async update(object, _resolved, remote) {
      if (!sameLeafCertificate(object.spec.caPem, remote.ca_pem)) {
        throw new TerminalSyncError(
          'InvalidSpec',
          `spec.caPem: ${remote.id} holds another certificate; a CA's certificate cannot change`,
        );
      }
      const patch = changedFields(desiredFields(object), remote);
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.certificateAuthorities.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.certificateAuthorities.delete(id),
    statusFields: (_object, remote) => x509Status(remote),
  };
}
