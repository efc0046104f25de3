import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { registerManaged } from '../managed/register-managed.js';
import { CERTIFICATE_AUTHORITY } from '../resource-types.js';
import { type CertificateAuthorityObject, certificateAuthoritySync } from './sync.js';

/**
 * CertificateAuthority -> `/certificate_authorities`. No references of its own; TLS and HTTPS
 * edges name it in `mutualTls.certificateAuthorityRefs` and wait for it to be Ready.
 */
export function registerCertificateAuthority(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<CertificateAuthorityObject> {
  return registerManaged(manager, CERTIFICATE_AUTHORITY, certificateAuthoritySync(api));
}
