import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { SECRET } from '../../runtime/resource-types.js';
import { registerManaged } from '../managed/register-managed.js';
import { TLS_CERTIFICATE } from '../resource-types.js';
import { NAMED_SECRETS_WATCH, type SecretObject } from '../shared/secret-values.js';
import { type TlsCertificateObject, tlsCertificateSync } from './sync.js';

/**
 * TLSCertificate -> `/tls_certificates`: its private key read from a Secret for the create, or its
 * certificate and key from a `kubernetes.io/tls` Secret (`secretRef`), replaced on the server
 * whenever that Secret changes.
 */
export function registerTlsCertificate(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<TlsCertificateObject> {
  const sync = tlsCertificateSync(api, manager.resources<SecretObject>(SECRET));
  return registerManaged(manager, TLS_CERTIFICATE, sync, {
    // The Secret a certificate comes from: each change of it (cert-manager renewing it) reconciles
    // the certificate. The key Secret of an inline one: its appearing enqueues a certificate that
    // waits for it.
    references: ({ spec }) => {
      const name = spec.secretRef?.name ?? spec.privateKeySecretRef?.name;
      return name ? [{ kind: SECRET.kind, name }] : [];
    },
    watches: [NAMED_SECRETS_WATCH],
  });
}
