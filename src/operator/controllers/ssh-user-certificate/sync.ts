import { DEFAULT_SSH_USER_EXTENSIONS, type SshUserCertificate } from '../../../schemas/ssh-certificates.js';
import type {
  SshUserCertificateSpec,
  SshUserCertificateStatus,
} from '../../crds/definitions/ssh-user-certificate.js';
import type { ManagedObject } from '../managed/managed-resource.js';

export type SshUserCertificateObject = ManagedObject & {
  spec: SshUserCertificateSpec;
  status?: SshUserCertificateStatus;
};

/** The spec's critical options under their OpenSSH names (the API's map form). */
export function criticalOptionsOf(spec: SshUserCertificateSpec): Record<string, string> {
  const options: Record<string, string> = {};
  if (spec.criticalOptions?.forceCommand !== undefined) {
    options['force-command'] = spec.criticalOptions.forceCommand;
  }
  if (spec.criticalOptions?.sourceAddress !== undefined) {
    options['source-address'] = spec.criticalOptions.sourceAddress;
  }
  return options;
}

function sameMap(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => b[key] === a[key]);
}

/**
 * Why a user certificate's options or extensions differ from the spec's, or undefined. Absent
 * extensions mean the server's default (permit-pty, permit-user-rc), so that is what they are
 * compared with; `{}` means none.
 */
export function userFieldsMismatch(
  spec: SshUserCertificateSpec,
  remote: Pick<SshUserCertificate, 'id' | 'critical_options' | 'extensions'>,
): string | undefined {
  if (!sameMap(criticalOptionsOf(spec), remote.critical_options)) {
    return `spec.criticalOptions differ from those of ${remote.id}`;
  }
  if (!sameMap(spec.extensions ?? DEFAULT_SSH_USER_EXTENSIONS, remote.extensions)) {
    return `spec.extensions differ from those of ${remote.id}`;
  }
  return undefined;
}
