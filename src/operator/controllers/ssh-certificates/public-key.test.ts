import { generateKeyPairSync } from 'node:crypto';
import sshpk from 'sshpk';
import { describe, expect, it } from 'vitest';
import { samePublicKey, sshKeyShape } from './public-key.js';

/** A new public key as an OpenSSH line (and PEM), without running ssh-keygen. */
function testKey(type: 'ed25519' | 'ecdsa' | 'rsa', option?: string | number) {
  const pair =
    type === 'ecdsa'
      ? generateKeyPairSync('ec', { namedCurve: String(option ?? 'P-256') })
      : type === 'rsa'
        ? generateKeyPairSync('rsa', { modulusLength: Number(option ?? 2048) })
        : generateKeyPairSync('ed25519');
  const pem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { line: `${sshpk.parseKey(pem, 'pem').toString('ssh')} test@edgeward`, pem };
}

describe('SSH public key comparison', () => {
  it('sees the same key through another comment or encoding, and tells different keys apart', () => {
    const key = testKey('ed25519');
    const bare = key.line.split(' ').slice(0, 2).join(' ');
    expect(samePublicKey(key.line, `${bare} someone-else@host\n`)).toBe(true);
    expect(samePublicKey(key.line, key.pem)).toBe(true);
    expect(samePublicKey(key.line, testKey('ed25519').line)).toBe(false);
    // Unreadable text falls back to the text itself, so a typo never equals a real key.
    expect(samePublicKey('not a key', 'not a key ')).toBe(true);
    expect(samePublicKey('not a key', key.line)).toBe(false);
  });

  it('reads the type, curve and modulus size of a key', () => {
    expect(sshKeyShape(testKey('ed25519').line)).toEqual({ keyType: 'ed25519' });
    expect(sshKeyShape(testKey('ecdsa', 'P-384').line)).toEqual({ keyType: 'ecdsa', ellipticCurve: 'p384' });
    expect(sshKeyShape(testKey('rsa', 2048).line)).toEqual({ keyType: 'rsa', keySize: 2048 });
    expect(sshKeyShape('ssh-ed25519 garbage')).toBeUndefined();
  });
});
