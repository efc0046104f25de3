import sshpk from 'sshpk';

/** The key in an OpenSSH line or PEM text, or undefined when it is none (the server says why). */
function parsedKey(text: string): sshpk.Key | undefined {
  try {
    return sshpk.parseKey(text.trim(), 'auto');
  } catch {
    // Not ours to report: the server refuses such a key on create with a precise message.
    return undefined;
  }
}

/**
 * Whether two public-key texts hold the same key. The comment of an authorized_keys line, or
 * another encoding of the same key (PEM vs OpenSSH), must not read as a different key when a
 * spec is compared with what the server stores (on adoption, above all).
 */
export function samePublicKey(a: string, b: string): boolean {
  const keyA = parsedKey(a);
  const keyB = parsedKey(b);
  if (!keyA || !keyB) return a.trim() === b.trim();
  return keyA.fingerprint('sha256').toString() === keyB.fingerprint('sha256').toString();
}

/** What an SSH CA's public key is: its type and the curve (ecdsa) or modulus size (rsa). */
export interface SshKeyShape {
  keyType: string;
  ellipticCurve?: string;
  keySize?: number;
}

/** The shape of an OpenSSH public key line; undefined when it cannot be read. */
export function sshKeyShape(line: string): SshKeyShape | undefined {
  const key = parsedKey(line);
  if (!key) return undefined;
  if (key.type === 'ecdsa') {
    // sshpk names the curves nistp256..nistp521; the spec (like the API) says p256..p521.
    return { keyType: 'ecdsa', ellipticCurve: String(key.curve).replace(/^nist/, '') };
  }
  if (key.type === 'rsa') return { keyType: 'rsa', keySize: key.size };
  return { keyType: key.type };
}
