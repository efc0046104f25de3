import type { EdgewardClient } from '../../../client/index.js';
import type { SshUserCertificate } from '../../../schemas/ssh-certificates.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { SSH_USER_CERTIFICATE } from '../resource-types.js';
import { registerSshCertificate } from '../ssh-certificates/register-certificate.js';
import { criticalOptionsOf, type SshUserCertificateObject, userFieldsMismatch } from './sync.js';

/**
 * SSHUserCertificate -> `/ssh_user_certificates`: the common certificate sync (see
 * ssh-certificates/certificate-sync.ts) plus critical options and extensions, which are signed
 * too, so a change of them signs a new certificate.
 */
export function registerSshUserCertificate(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<SshUserCertificateObject> {
  const certificates = api.sshUserCertificates;
  return registerSshCertificate<SshUserCertificateObject, SshUserCertificate>(manager, {
    kind: SSH_USER_CERTIFICATE,
    get: (id) => certificates.get(id),
    create: (object, request, options) =>
      certificates.create(
        {
          ...request,
          critical_options: criticalOptionsOf(object.spec),
          extensions: object.spec.extensions,
        },
        options,
      ),
    update: (id, patch) => certificates.update(id, patch),
    delete: (id) => certificates.delete(id),
    signedFieldsMismatch: (object, remote) => userFieldsMismatch(object.spec, remote),
  });
}
