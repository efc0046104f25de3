import type { KubernetesObject } from '@kubernetes/client-node';
import { getIfExists } from '../../runtime/get-if-exists.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import type { ResourceKind } from '../../runtime/resource-types.js';
import { ownedBy, writeOwnedSecret } from '../shared/owned-secrets.js';
import type { SecretObject } from '../shared/secret-values.js';

/** The key of the signed certificate (an authorized_keys-style line, for a `-cert.pub` file). */
export const CERTIFICATE_KEY = 'certificate';
/** On the Secret: which server certificate it holds, so a replacement shows in it. */
export const CERTIFICATE_ID_ANNOTATION = 'edgeward.dev/certificate-id';

/** What the Secret named by the spec holds, as far as this certificate CR is concerned. */
export type CertificateSecretState =
  | { state: 'missing' }
  /** Someone else's Secret of that name: never overwritten. */
  | { state: 'foreign' }
  | { state: 'owned'; secret: SecretObject; certificateId: string | undefined; certificate: string };

/** The certificate as the server sent it: what the Secret must hold. */
export interface SignedCertificate {
  id: string;
  certificate: string;
}

export async function readCertificateSecret(
  secrets: KubeResources<SecretObject>,
  owner: KubernetesObject,
  name: string,
): Promise<CertificateSecretState> {
  const secret = await getIfExists(secrets, owner.metadata?.namespace, name);
  if (!secret) return { state: 'missing' };
  if (!ownedBy(secret, owner)) return { state: 'foreign' };
  const encoded = secret.data?.[CERTIFICATE_KEY];
  return {
    state: 'owned',
    secret,
    certificateId: secret.metadata?.annotations?.[CERTIFICATE_ID_ANNOTATION],
    certificate: encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '',
  };
}

/** Whether the Secret holds exactly the server's certificate (so nothing needs writing). */
export function secretHolds(state: CertificateSecretState, signed: SignedCertificate): boolean {
  return (
    state.state === 'owned' && state.certificateId === signed.id && state.certificate === signed.certificate
  );
}

/**
 * Creates the Secret, or rewrites the one this CR owns, with the server's certificate. The
 * certificate is public and the server keeps it, so this is also how a deleted or edited Secret
 * is repaired: no re-signing. A foreign Secret that appeared since `resolve` is refused.
 */
export async function writeCertificateSecret(
  secrets: KubeResources<SecretObject>,
  owner: KubernetesObject,
  ownerKind: ResourceKind,
  name: string,
  signed: SignedCertificate,
): Promise<void> {
  await writeOwnedSecret(secrets, owner, ownerKind, name, {
    annotations: { [CERTIFICATE_ID_ANNOTATION]: signed.id },
    data: { [CERTIFICATE_KEY]: Buffer.from(signed.certificate, 'utf8').toString('base64') },
  });
}
