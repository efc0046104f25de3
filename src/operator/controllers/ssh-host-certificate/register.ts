import type { EdgewardClient } from '../../../client/index.js';
import type { SshHostCertificate } from '../../../schemas/ssh-certificates.js';
import type {
  SshHostCertificateSpec,
  SshHostCertificateStatus,
} from '../../crds/definitions/ssh-host-certificate.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import type { ManagedObject } from '../managed/managed-resource.js';
import { SSH_HOST_CERTIFICATE } from '../resource-types.js';
import { registerSshCertificate } from '../ssh-certificates/register-certificate.js';

export type SshHostCertificateObject = ManagedObject & {
  spec: SshHostCertificateSpec;
  status?: SshHostCertificateStatus;
};

/**
 * SSHHostCertificate -> `/ssh_host_certificates`: the common certificate sync with no fields of
 * its own (see ssh-certificates/certificate-sync.ts).
 */
export function registerSshHostCertificate(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<SshHostCertificateObject> {
  const certificates = api.sshHostCertificates;
  return registerSshCertificate<SshHostCertificateObject, SshHostCertificate>(manager, {
    kind: SSH_HOST_CERTIFICATE,
    get: (id) => certificates.get(id),
    create: (_object, request, options) => certificates.create(request, options),
    update: (id, patch) => certificates.update(id, patch),
    delete: (id) => certificates.delete(id),
  });
}
