import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { SECRET } from '../../runtime/resource-types.js';
import { registerManaged } from '../managed/register-managed.js';
import { TLS_CERTIFICATE } from '../resource-types.js';
import { NAMED_SECRETS_WATCH, type SecretObject } from '../shared/secret-values.js';
import { type TlsCertificateObject, tlsCertificateSync } from './sync.js';

/** TLSCertificate -> `/tls_certificates`, its private key read from a Secret for the create. */
export function registerTlsCertificate(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<TlsCertificateObject> {
  const sync = tlsCertificateSync(api, manager.resources<SecretObject>(SECRET));
  return registerManaged(manager, TLS_CERTIFICATE, sync, {
    // Only a certificate still waiting for its key Secret cares: the Secret appearing enqueues it.
    references: (certificate) => [{ kind: SECRET.kind, name: certificate.spec.privateKeySecretRef.name }],
    watches: [NAMED_SECRETS_WATCH],
  });
}
