import { getIfExists } from '../../runtime/get-if-exists.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import type { Resolution } from '../managed/managed-resource.js';
import type { SecretObject } from './secret-values.js';
import { InvalidTlsPairError, readTlsPair, type TlsPair } from './tls-pair.js';

/**
 * A certificate from a `kubernetes.io/tls` Secret (cert-manager's, or one made with `kubectl create
 * secret tls`): the one path every Kubernetes object that names such a Secret takes to the edges.
 * Whatever names one (an Ingress's `spec.tls[].secretName`, later a Gateway listener's
 * `certificateRefs`) owns a TLSCertificate with `secretRef` (`tlsCertificateForSecret`); the
 * TLSCertificate controller reads the Secret (`readTlsSecretCertificate`), uploads its certificate
 * and replaces it on the server whenever the Secret holds another one.
 */

export const TLS_CERT_KEY = 'tls.crt';
export const TLS_KEY_KEY = 'tls.key';

/** What the Secret holds now, checked as the server will check it. */
export interface SecretCertificate extends TlsPair {
  secretName: string;
}

/**
 * Reads and checks the Secret (a live read: its values are never cached). Not ready when it does
 * not exist (`SecretNotFound`) or its `tls.crt`/`tls.key` are missing, not PEM, not a chain leaf
 * first, or not a matching pair (`InvalidSecret`): no timer, the Secret watch reconciles the
 * object when the Secret changes. Messages name the Secret and the key, never a value.
 */
export async function readTlsSecretCertificate(
  secrets: KubeResources<SecretObject>,
  namespace: string | undefined,
  name: string,
  field: string,
): Promise<Resolution<SecretCertificate>> {
  const secret = await getIfExists(secrets, namespace, name, `${field}: reading Secret ${name}`);
  if (!secret)
    return { ready: false, reason: 'SecretNotFound', message: `${field}: Secret ${name} does not exist` };
  const value = (key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
  const missing = [TLS_CERT_KEY, TLS_KEY_KEY].filter((key) => value(key).trim() === '');
  if (missing.length > 0) {
    return invalid(`${field}: Secret ${name} has no (or an empty) ${missing.join(' and ')}`);
  }
  try {
    const pair = readTlsPair(value(TLS_CERT_KEY), value(TLS_KEY_KEY), {
      certificate: `Secret ${name} key ${TLS_CERT_KEY}`,
      privateKey: `Secret ${name} key ${TLS_KEY_KEY}`,
    });
    return { ready: true, value: { ...pair, secretName: name } };
  } catch (error) {
    if (error instanceof InvalidTlsPairError) return invalid(`${field}: ${error.message}`);
    throw error;
  }
}

const invalid = (message: string): Resolution<never> => ({ ready: false, reason: 'InvalidSecret', message });

/**
 * The spec of the TLSCertificate an object owns for a Secret it names (created and kept by that
 * object's controller, deleted with it): the certificate follows the Secret as it renews.
 */
export function tlsCertificateForSecret(secretName: string, description: string) {
  return {
    description: description.slice(0, 255),
    secretRef: { name: secretName },
    deletionPolicy: 'Delete' as const,
  };
}
