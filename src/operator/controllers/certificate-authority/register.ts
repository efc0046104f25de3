import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { CERTIFICATE_AUTHORITY } from '../kinds.js';
import { registerManaged } from '../managed/register-managed.js';
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
