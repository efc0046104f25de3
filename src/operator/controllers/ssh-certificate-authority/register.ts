import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { registerManaged } from '../managed/register-managed.js';
import { SSH_CERTIFICATE_AUTHORITY } from '../resource-types.js';
import { type SshCertificateAuthorityObject, sshCertificateAuthoritySync } from './sync.js';

/**
 * SSHCertificateAuthority -> `/ssh_certificate_authorities`. No references of its own;
 * SSHHostCertificates and SSHUserCertificates name it and wait for it to be Ready.
 */
export function registerSshCertificateAuthority(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<SshCertificateAuthorityObject> {
  return registerManaged(manager, SSH_CERTIFICATE_AUTHORITY, sshCertificateAuthoritySync(api));
}
