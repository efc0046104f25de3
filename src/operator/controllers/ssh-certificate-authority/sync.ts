import type { EdgewardClient } from '../../../client/index.js';
import type { SshCertificateAuthority } from '../../../schemas/ssh-certificate-authorities.js';
import type {
  SshCertificateAuthoritySpec,
  SshCertificateAuthorityStatus,
} from '../../crds/definitions/ssh-certificate-authority.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import { changedFields } from '../shared/changed-fields.js';
import { describedFields } from '../shared/described-fields.js';
import { sshKeyShape } from '../ssh-certificates/public-key.js';

export type SshCertificateAuthorityObject = ManagedObject & {
  spec: SshCertificateAuthoritySpec;
  status?: SshCertificateAuthorityStatus;
};

/** The server's defaults for a generated key pair, so an adopted CA is compared with what it would get. */
const DEFAULT_CURVE = 'p256';
const DEFAULT_RSA_BITS = 4096;

function desiredFields(object: SshCertificateAuthorityObject) {
  return describedFields(object.spec);
}

/**
 * Why the CA's key pair is not the one the spec asks for, or undefined. The server reports only
 * the key type, so the curve and the modulus size are read from the public key itself.
 */
export function keyPairMismatch(
  spec: SshCertificateAuthoritySpec,
  remote: Pick<SshCertificateAuthority, 'id' | 'key_type' | 'public_key'>,
): string | undefined {
  const wantType = spec.keyType ?? 'ed25519';
  if (remote.key_type !== wantType) {
    return `spec.keyType: ${remote.id} has a ${remote.key_type} key pair, not ${wantType}`;
  }
  const shape = sshKeyShape(remote.public_key);
  if (!shape) return `${remote.id}: its public key cannot be read`;
  const wantCurve = spec.ellipticCurve ?? DEFAULT_CURVE;
  if (wantType === 'ecdsa' && shape.ellipticCurve !== wantCurve) {
    return `spec.ellipticCurve: ${remote.id} has a key on curve ${shape.ellipticCurve}, not ${wantCurve}`;
  }
  const wantBits = spec.keySize ?? DEFAULT_RSA_BITS;
  if (wantType === 'rsa' && shape.keySize !== wantBits) {
    return `spec.keySize: ${remote.id} has a ${shape.keySize}-bit key, not ${wantBits}`;
  }
  return undefined;
}

/**
 * SSHCertificateAuthority -> `/ssh_certificate_authorities`. The server generates the key pair
 * and never lets its private key out; the key parameters are immutable (CEL on the object, and
 * the server takes description and metadata only on update), so an adopted CA with another key
 * pair is reported as InvalidSpec, never "fixed" by replacing it: certificates it signed, and
 * every host or user that trusts its public key, depend on that key.
 */
export function sshCertificateAuthoritySync(
  api: EdgewardClient,
): ResourceSync<SshCertificateAuthorityObject, undefined, SshCertificateAuthority> {
  return {
    resolve: async () => ({ ready: true, value: undefined }),
    get: (id) => api.sshCertificateAuthorities.get(id),
    create: (object, _resolved, options) =>
      api.sshCertificateAuthorities.create(
        {
          ...desiredFields(object),
          private_key_type: object.spec.keyType,
          elliptic_curve: object.spec.ellipticCurve,
          key_size: object.spec.keySize,
        },
        options,
      ),
    async update(object, _resolved, remote) {
      const mismatch = keyPairMismatch(object.spec, remote);
      if (mismatch) {
        throw new TerminalSyncError('InvalidSpec', `${mismatch}; a CA's key pair cannot change`);
      }
      const patch = changedFields(desiredFields(object), remote);
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.sshCertificateAuthorities.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.sshCertificateAuthorities.delete(id),
    statusFields: (_object, remote) => ({ publicKey: remote.public_key, keyType: remote.key_type }),
  };
}
