import sshpk from 'sshpk';

export const MIN_RSA_BITS = 2048;

export interface ParsedSshPublicKey {
  /** `ed25519`, `rsa` or `ecdsa`. */
  type: string;
  /** Key size in bits (RSA modulus, ECDSA curve size, 256 for ed25519). */
  bits: number;
  /** `SHA256:<base64>`, the same string `ssh-keygen -l` prints. */
  fingerprint: string;
}

/** A public key the caller must fix; `message` follows the field name in the API error. */
export class SshPublicKeyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SshPublicKeyError';
  }
}

const PEM_BEGIN = /^-{4,5} ?BEGIN ([A-Z0-9 ]+?) ?-{4,5}\r?$/m;
const OPENSSH_LINE = /^(ssh-[a-z0-9-]+|ecdsa-sha2-[a-z0-9-]+)\s/;
const ACCEPTED = 'an OpenSSH public key line (ssh-ed25519, ssh-rsa, ecdsa-sha2-*) or a PEM public key';

function looksPrivate(text: string): boolean {
  const banner = PEM_BEGIN.exec(text)?.[1];
  if (banner?.includes('PRIVATE')) return true;
  if (/^PuTTY-User-Key-File-/im.test(text)) return true;
  try {
    sshpk.parsePrivateKey(text, 'auto');
    return true;
  } catch (error) {
    // An encrypted private key fails for want of a passphrase: still a private key.
    return error instanceof Error && error.name === 'KeyEncryptedError';
  }
}

/**
 * Only the two textual forms users paste are read: the OpenSSH single line and PEM (SPKI,
 * PKCS#1, RFC 4716). sshpk's `auto` would also take binary blobs, DNSSEC and PuTTY files, and it
 * silently reduces a private key to its public half, so the format is chosen here instead.
 */
function parse(text: string): sshpk.Key {
  if (PEM_BEGIN.test(text.split('\n', 1)[0] ?? '')) {
    try {
      return sshpk.parseKey(text, 'pem');
    } catch (cause) {
      throw new SshPublicKeyError('is not a readable PEM public key', { cause });
    }
  }
  if (OPENSSH_LINE.test(text)) {
    if (text.includes('\n')) throw new SshPublicKeyError('must be a single key on a single line');
    try {
      return sshpk.parseKey(text, 'ssh');
    } catch (cause) {
      throw new SshPublicKeyError('is not a readable OpenSSH public key', { cause });
    }
  }
  throw new SshPublicKeyError(`is not an SSH public key; send ${ACCEPTED}`);
}

/** Parses a public key and checks it is one we accept for authentication. */
export function parseSshPublicKey(input: string): ParsedSshPublicKey {
  const text = input.trim();
  if (looksPrivate(text)) throw new SshPublicKeyError('is a private key; send only the public key');
  const key = parse(text);
  if (key.type === 'rsa' && key.size < MIN_RSA_BITS) {
    throw new SshPublicKeyError(
      `is a ${key.size}-bit RSA key; RSA keys must have at least ${MIN_RSA_BITS} bits`,
    );
  }
  // DSA is limited to 1024 bits and disabled by OpenSSH since 7.0; nothing else is an SSH user key.
  if (key.type !== 'rsa' && key.type !== 'ecdsa' && key.type !== 'ed25519') {
    throw new SshPublicKeyError(`is a ${key.type} key; only ed25519, ecdsa and rsa keys are accepted`);
  }
  return { type: key.type, bits: key.size, fingerprint: key.fingerprint('sha256').toString() };
}
