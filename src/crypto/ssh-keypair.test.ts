import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sshpk from 'sshpk';
import { afterAll, describe, expect, it } from 'vitest';
import {
  generateSshCaKeyPair,
  openSshPublicKeyLine,
  type SshCaKeySpec,
  sshBlobKeyType,
  sshPublicKeyBlob,
} from './ssh-keypair.js';

const dir = mkdtempSync(join(tmpdir(), 'edgeward-ssh-keypair-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** `ssh-keygen -l` of a public key line: `<bits> SHA256:... <comment> (<TYPE>)`. */
function sshKeygenDescribe(line: string): string {
  const path = join(dir, `key-${++files}.pub`);
  writeFileSync(path, `${line}\n`);
  return execFileSync('ssh-keygen', ['-l', '-f', path], { encoding: 'utf8' }).trim();
}

describe('generateSshCaKeyPair', () => {
  it.each<[SshCaKeySpec, RegExp, string, number]>([
    [{ type: 'ed25519' }, /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5/, 'ED25519', 256],
    [{ type: 'ecdsa', curve: 'p256' }, /^ecdsa-sha2-nistp256 /, 'ECDSA', 256],
    [{ type: 'ecdsa', curve: 'p384' }, /^ecdsa-sha2-nistp384 /, 'ECDSA', 384],
    [{ type: 'ecdsa', curve: 'p521' }, /^ecdsa-sha2-nistp521 /, 'ECDSA', 521],
    [{ type: 'rsa', bits: 2048 }, /^ssh-rsa AAAAB3NzaC1yc2E/, 'RSA', 2048],
    [{ type: 'rsa', bits: 3072 }, /^ssh-rsa /, 'RSA', 3072],
  ])(
    '%j: OpenSSH reads the public key line, and it is the half of the private key',
    async (spec, prefix, sshType, bits) => {
      const pair = await generateSshCaKeyPair(spec);
      expect(pair.publicKeyLine).toMatch(prefix);
      expect(pair.publicKeyLine).toMatch(/^\S+ [A-Za-z0-9+/]+=*$/);
      expect(pair.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
      expect(sshKeygenDescribe(pair.publicKeyLine)).toMatch(
        new RegExp(`^${bits} SHA256:\\S+ .*\\(${sshType}\\)$`),
      );
      // sshpk derives the public blob from the private key on its own; both encodings must agree.
      const fromPrivate = sshpk.parsePrivateKey(pair.privateKeyPem, 'pkcs8').toPublic().toBuffer('rfc4253');
      expect(openSshPublicKeyLine(fromPrivate)).toBe(pair.publicKeyLine);
      const signature = sign(spec.type === 'ed25519' ? null : 'sha256', Buffer.from('m'), pair.privateKeyPem);
      const spki = createPublicKey(sshpk.parseKey(pair.publicKeyLine, 'ssh').toString('pkcs8'));
      expect(verify(spec.type === 'ed25519' ? null : 'sha256', Buffer.from('m'), spki, signature)).toBe(true);
    },
  );

  it('agrees with ssh-keygen -y on the public key of EC and RSA private keys', async () => {
    for (const spec of [
      { type: 'ecdsa', curve: 'p521' },
      { type: 'rsa', bits: 2048 },
    ] as const) {
      const pair = await generateSshCaKeyPair(spec);
      const path = join(dir, `private-${++files}.pem`);
      // ssh-keygen reads PKCS#8 PEM for these types (not for ed25519 in OpenSSH 9.2).
      writeFileSync(path, pair.privateKeyPem, { mode: 0o600 });
      const derived = execFileSync('ssh-keygen', ['-y', '-f', path], { encoding: 'utf8' }).trim();
      expect(derived.split(' ').slice(0, 2).join(' ')).toBe(pair.publicKeyLine);
    }
  });

  it('makes a new key pair every time', async () => {
    const a = await generateSshCaKeyPair({ type: 'ed25519' });
    const b = await generateSshCaKeyPair({ type: 'ed25519' });
    expect(a.publicKeyLine).not.toBe(b.publicKeyLine);
    expect(a.privateKeyPem).not.toBe(b.privateKeyPem);
  });
});

describe('sshPublicKeyBlob', () => {
  it('gives the same blob for a private key and its public key, with a canonical RSA mpint', async () => {
    const pair = await generateSshCaKeyPair({ type: 'rsa', bits: 2048 });
    const privateKey = createPrivateKey(pair.privateKeyPem);
    const blob = sshPublicKeyBlob(privateKey);
    expect(blob.equals(sshPublicKeyBlob(createPublicKey(privateKey)))).toBe(true);
    expect(sshBlobKeyType(blob)).toBe('ssh-rsa');
    // e = 65537 is `00000003 010001`; a 2048-bit modulus has its top bit set, so 257 bytes with a 0 pad.
    expect(blob.subarray(11, 18).toString('hex')).toBe('00000003010001');
    expect(blob.readUInt32BE(18)).toBe(257);
    expect(blob[22]).toBe(0);
  });

  it('refuses key types SSH has no encoding for here', () => {
    const x25519 = createPublicKey({
      key: { kty: 'OKP', crv: 'X25519', x: Buffer.alloc(32, 9).toString('base64url') },
      format: 'jwk',
    });
    expect(() => sshPublicKeyBlob(x25519)).toThrow(/x25519 keys have no SSH encoding/);
  });
});
