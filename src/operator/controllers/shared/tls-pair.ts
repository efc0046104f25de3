import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';

/**
 * A certificate chain and its private key as the server accepts them (`/tls_certificates`: leaf
 * first, each certificate issued and signed by the next, the key matching the leaf), checked
 * before an upload so that a Secret with the wrong contents is reported as such and waits for its
 * next version, instead of failing at the server. Messages name what is wrong, never a key.
 */

export interface TlsPair {
  /** The certificates re-encoded (no text around them), leaf first: the same text for the same chain. */
  chainPem: string;
  privateKeyPem: string;
  /** The leaf's serial number, lowercase hex (as the server shows it). */
  serialNumber: string;
  /** The leaf's notAfter, RFC 3339. */
  notAfter: string;
}

/** Why a chain or key cannot be uploaded. */
export class InvalidTlsPairError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InvalidTlsPairError';
  }
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * Checks the chain and the key; `names` says where each came from (e.g. `Secret web-tls key
 * tls.crt`) for the messages.
 */
export function readTlsPair(
  certificatePem: string,
  privateKeyPem: string,
  names: { certificate: string; privateKey: string },
): TlsPair {
  const blocks = certificatePem.match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) throw new InvalidTlsPairError(`${names.certificate} holds no PEM certificate`);
  const chain = blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new InvalidTlsPairError(`${names.certificate}: certificate ${index + 1} does not parse`, {
        cause: error,
      });
    }
  });
  for (let index = 0; index + 1 < chain.length; index++) {
    const [subject, issuer] = [chain[index], chain[index + 1]] as [X509Certificate, X509Certificate];
    if (!subject.checkIssued(issuer) || !subject.verify(issuer.publicKey)) {
      throw new InvalidTlsPairError(
        `${names.certificate}: certificate ${index + 1} is not issued and signed by certificate ${index + 2} (the chain must be leaf first)`,
      );
    }
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch (error) {
    // The cause (OpenSSL's reason) says nothing of the key's contents.
    throw new InvalidTlsPairError(`${names.privateKey} is not an unencrypted PEM private key`, {
      cause: error,
    });
  }
  const leaf = chain[0] as X509Certificate;
  if (!leaf.checkPrivateKey(key)) {
    throw new InvalidTlsPairError(
      `${names.privateKey} is not the key of the certificate in ${names.certificate}`,
    );
  }
  return {
    chainPem: chain.map((certificate) => certificate.toString()).join(''),
    privateKeyPem,
    serialNumber: leaf.serialNumber.toLowerCase(),
    notAfter: new Date(leaf.validTo).toISOString().replace(/\.000Z$/, 'Z'),
  };
}

/** Whether two PEM chains hold the same certificates in the same order (encoding aside). */
export function sameChain(a: string, b: string): boolean {
  const ders = (pem: string) => {
    try {
      return (pem.match(CERTIFICATE_BLOCK) ?? []).map((block) => new X509Certificate(block).raw);
    } catch {
      return undefined;
    }
  };
  const [left, right] = [ders(a), ders(b)];
  if (!left || !right || left.length !== right.length) return false;
  return left.every((der, index) => der.equals(right[index] as Buffer));
}
