import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { SSH_CERTIFICATE_AUTHORITY } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type SshCertificateAuthorityObject, sshCertificateAuthoritySync } from './sync.js';

/**
 * SSHCertificateAuthority -> `/ssh_certificate_authorities`. No references of its own;
 * SSHHostCertificates and SSHUserCertificates name it and wait for it to be Ready.
 */
export function registerSshCertificateAuthority(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<SshCertificateAuthorityObject> {
  const client = manager.resources<SshCertificateAuthorityObject>(SSH_CERTIFICATE_AUTHORITY);
  const informer = manager.informer<SshCertificateAuthorityObject>(SSH_CERTIFICATE_AUTHORITY);
  const controller = {
    manager,
    kind: SSH_CERTIFICATE_AUTHORITY,
    client,
    informer,
    sync: sshCertificateAuthoritySync(api),
  };
  return manager.register<SshCertificateAuthorityObject>({
    kind: SSH_CERTIFICATE_AUTHORITY,
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
