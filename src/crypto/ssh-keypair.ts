import { createPublicKey, generateKeyPair, type JsonWebKey, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { readSshString, sshMpint, sshString } from './ssh-wire.js';

const generate = promisify(generateKeyPair);

export type SshEllipticCurve = 'p256' | 'p384' | 'p521';
export type SshRsaKeySize = 2048 | 3072 | 4096;

/** What kind of key pair an SSH certificate authority gets. */
export type SshCaKeySpec =
  | { type: 'ed25519' }
  | { type: 'ecdsa'; curve: SshEllipticCurve }
  | { type: 'rsa'; bits: SshRsaKeySize };

export interface SshCaKeyPair {
  /** PKCS#8 PEM of the private key: what is sealed at rest. */
  privateKeyPem: string;
  /** The public key as an OpenSSH authorized_keys line (`ssh-ed25519 AAAA...`). */
  publicKeyLine: string;
}

const NODE_CURVES: Record<SshEllipticCurve, string> = {
  p256: 'prime256v1',
  p384: 'secp384r1',
  p521: 'secp521r1',
};

/** The SSH names of the NIST curves, keyed by their JWK `crv`. */
const SSH_CURVES: Record<string, { name: string; coordinateBytes: number }> = {
  'P-256': { name: 'nistp256', coordinateBytes: 32 },
  'P-384': { name: 'nistp384', coordinateBytes: 48 },
  'P-521': { name: 'nistp521', coordinateBytes: 66 },
};

/**
 * A fresh key pair. The asynchronous generator runs on libuv's thread pool, so a 4096-bit RSA key
 * (a second or two of work) does not block the event loop. It still takes that long, so call it
 * outside any database transaction (a route's `prepare` step): with SQLite an open write
 * transaction makes every other request wait.
 */
export async function generateSshCaKeyPair(spec: SshCaKeySpec): Promise<SshCaKeyPair> {
  const pair = await generateFor(spec);
  return {
    privateKeyPem: pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicKeyLine: openSshPublicKeyLine(sshPublicKeyBlob(pair.publicKey)),
  };
}

function generateFor(spec: SshCaKeySpec): Promise<{ publicKey: KeyObject; privateKey: KeyObject }> {
  switch (spec.type) {
    case 'ed25519':
      return generate('ed25519');
    case 'ecdsa':
      return generate('ec', { namedCurve: NODE_CURVES[spec.curve] });
    case 'rsa':
      return generate('rsa', { modulusLength: spec.bits, publicExponent: 0x10001 });
  }
}

function jwkBytes(jwk: JsonWebKey, member: 'x' | 'y' | 'n' | 'e'): Buffer {
  const value = jwk[member];
  if (typeof value !== 'string') throw new Error(`JWK of the key has no '${member}'`);
  return Buffer.from(value, 'base64url');
}

/** Left-pads a JWK coordinate (which drops no bytes, but be safe) to the curve's fixed width. */
function fixedWidth(bytes: Buffer, width: number): Buffer {
  if (bytes.length > width) throw new Error(`EC coordinate of ${bytes.length} bytes exceeds ${width}`);
  return Buffer.concat([Buffer.alloc(width - bytes.length), bytes]);
}

/**
 * The RFC 4253 / RFC 5656 / RFC 8709 public key blob of a key (public or private KeyObject):
 * `string type, <type-specific public parts>`.
 */
export function sshPublicKeyBlob(key: KeyObject): Buffer {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const jwk = publicKey.export({ format: 'jwk' });
  switch (publicKey.asymmetricKeyType) {
    case 'ed25519':
      return Buffer.concat([sshString('ssh-ed25519'), sshString(jwkBytes(jwk, 'x'))]);
    case 'ec': {
      const curve = SSH_CURVES[jwk.crv ?? ''];
      if (!curve) throw new Error(`EC curve ${jwk.crv} has no SSH name`);
      const point = Buffer.concat([
        Buffer.from([0x04]), // uncompressed point, the only form SSH uses
        fixedWidth(jwkBytes(jwk, 'x'), curve.coordinateBytes),
        fixedWidth(jwkBytes(jwk, 'y'), curve.coordinateBytes),
      ]);
      return Buffer.concat([sshString(`ecdsa-sha2-${curve.name}`), sshString(curve.name), sshString(point)]);
    }
    case 'rsa':
      return Buffer.concat([
        sshString('ssh-rsa'),
        sshMpint(jwkBytes(jwk, 'e')),
        sshMpint(jwkBytes(jwk, 'n')),
      ]);
    default:
      throw new Error(`${publicKey.asymmetricKeyType} keys have no SSH encoding here`);
  }
}

/** The key type name a blob starts with, e.g. `ssh-ed25519` or `ecdsa-sha2-nistp384`. */
export function sshBlobKeyType(blob: Buffer): string {
  return readSshString(blob, 0).value.toString('utf8');
}

/** `<type> <base64 blob>`: the authorized_keys form, without a comment. */
export function openSshPublicKeyLine(blob: Buffer): string {
  return `${sshBlobKeyType(blob)} ${blob.toString('base64')}`;
}
