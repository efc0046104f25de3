import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { CERTIFICATE_AUTHORITY } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type CertificateAuthorityObject, certificateAuthoritySync } from './sync.js';

/**
 * CertificateAuthority -> `/certificate_authorities`. No references of its own; TLSEdges (and
 * later HTTPS edges) name it in `mutualTls.certificateAuthorityRefs` and wait for it to be Ready.
 */
export function registerCertificateAuthority(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<CertificateAuthorityObject> {
  const client = manager.resources<CertificateAuthorityObject>(CERTIFICATE_AUTHORITY);
  const informer = manager.informer<CertificateAuthorityObject>(CERTIFICATE_AUTHORITY);
  const controller = {
    manager,
    kind: CERTIFICATE_AUTHORITY,
    client,
    informer,
    sync: certificateAuthoritySync(api),
  };
  return manager.register<CertificateAuthorityObject>({
    kind: CERTIFICATE_AUTHORITY,
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
