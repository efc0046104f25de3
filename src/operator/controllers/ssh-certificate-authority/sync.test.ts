import { generateKeyPairSync } from 'node:crypto';
import sshpk from 'sshpk';
import { describe, expect, it } from 'vitest';
import type { SshCertificateAuthoritySpec } from '../../crds/definitions/ssh-certificate-authority.js';
import { keyPairMismatch } from './sync.js';

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

const remote = (key_type: 'ed25519' | 'ecdsa' | 'rsa', public_key: string) => ({
  id: 'sshca_1',
  key_type,
  public_key,
});
const spec = (fields: Partial<SshCertificateAuthoritySpec>) =>
  ({ keyType: 'ed25519', ...fields }) as SshCertificateAuthoritySpec;

describe('SSHCertificateAuthority key pair check', () => {
  it('accepts the key pair the spec asks for, defaults included', () => {
    expect(keyPairMismatch(spec({}), remote('ed25519', testKey('ed25519').line))).toBeUndefined();
    expect(
      keyPairMismatch(spec({ keyType: 'ecdsa' }), remote('ecdsa', testKey('ecdsa', 'P-256').line)),
    ).toBeUndefined();
    expect(
      keyPairMismatch(
        spec({ keyType: 'ecdsa', ellipticCurve: 'p384' }),
        remote('ecdsa', testKey('ecdsa', 'P-384').line),
      ),
    ).toBeUndefined();
    expect(
      keyPairMismatch(spec({ keyType: 'rsa', keySize: 2048 }), remote('rsa', testKey('rsa', 2048).line)),
    ).toBeUndefined();
  });

  it('names what differs: type, curve, modulus size', () => {
    expect(keyPairMismatch(spec({}), remote('ecdsa', testKey('ecdsa').line))).toMatch(
      /spec.keyType: sshca_1 has a ecdsa key pair, not ed25519/,
    );
    expect(
      keyPairMismatch(spec({ keyType: 'ecdsa' }), remote('ecdsa', testKey('ecdsa', 'P-384').line)),
    ).toMatch(/spec.ellipticCurve: .* curve p384, not p256/);
    // The default modulus is 4096 bits: an adopted 2048-bit CA does not match an unset keySize.
    expect(keyPairMismatch(spec({ keyType: 'rsa' }), remote('rsa', testKey('rsa', 2048).line))).toMatch(
      /spec.keySize: sshca_1 has a 2048-bit key, not 4096/,
    );
  });
});
