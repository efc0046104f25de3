import type { SshHostCertificate } from '../../../schemas/ssh-certificates.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { SECRET } from '../../runtime/resource-types.js';
import { ownersOf } from '../../runtime/watch-mappers.js';
import { registerManaged } from '../managed/register-managed.js';
import { SSH_CERTIFICATE_AUTHORITY } from '../resource-types.js';
import { ownedSecretsWatch } from '../shared/owned-secrets.js';
import type { ReferencedObject } from '../shared/ready-references.js';
import type { SecretObject } from '../shared/secret-values.js';
import {
  type CertificateVariant,
  type SshCertificateObject,
  sshCertificateSync,
} from './certificate-sync.js';

/**
 * Registers a certificate kind. Watches its SSHCertificateAuthority (by the reference index: a CA
 * becoming Ready, or recreated under a new id, reconciles the certificates it signs) and the
 * certificate Secrets it owns (a deleted or edited Secret is rewritten).
 */
export function registerSshCertificate<T extends SshCertificateObject, Remote extends SshHostCertificate>(
  manager: Manager,
  variant: CertificateVariant<T, Remote>,
): RegisteredController<T> {
  const { kind } = variant;
  const sync = sshCertificateSync<T, Remote>(
    {
      secrets: manager.resources<SecretObject>(SECRET),
      authorities: manager.informer<ReferencedObject>(SSH_CERTIFICATE_AUTHORITY),
    },
    variant,
  );
  return registerManaged(manager, kind, sync, {
    references: (certificate) => {
      const ref = certificate.spec.sshCertificateAuthorityRef;
      return ref ? [{ kind: SSH_CERTIFICATE_AUTHORITY.kind, name: ref.name }] : [];
    },
    watches: [{ kind: SSH_CERTIFICATE_AUTHORITY }, ownedSecretsWatch(ownersOf(kind))],
  });
}
