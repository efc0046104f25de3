import { execFileSync, spawnSync } from 'node:child_process';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SshCertificateRequest, signSshCertificate } from './ssh-certificate.js';
import { generateSshCaKeyPair, type SshCaKeySpec } from './ssh-keypair.js';
import { sshString } from './ssh-wire.js';

const dir = mkdtempSync(join(tmpdir(), 'edgeward-ssh-certificate-'));
let files = 0;
let subjectLine: string;
let subjectBlob: Buffer;
beforeAll(() => {
  const path = join(dir, 'subject');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path]);
  subjectLine = readFileSync(`${path}.pub`, 'utf8').trim();
  subjectBlob = Buffer.from(subjectLine.split(' ')[1] as string, 'base64');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function caKey(spec: SshCaKeySpec): Promise<{ key: KeyObject; line: string }> {
  const pair = await generateSshCaKeyPair(spec);
  return { key: createPrivateKey(pair.privateKeyPem), line: pair.publicKeyLine };
}

/** `ssh-keygen -L` in UTC: OpenSSH parses the certificate and checks the CA signature on load. */
function sshKeygenList(line: string): { status: number | null; out: string } {
  const path = join(dir, `c-${++files}-cert.pub`);
  writeFileSync(path, `${line}\n`);
  const result = spawnSync('ssh-keygen', ['-L', '-f', path], {
    encoding: 'utf8',
    env: { ...process.env, TZ: 'UTC' },
  });
  return { status: result.status, out: `${result.stdout}${result.stderr}` };
}

function request(overrides: Partial<SshCertificateRequest> = {}): SshCertificateRequest {
  return {
    type: 'user',
    subjectPublicKeyBlob: subjectBlob,
    keyId: 'sucrt_unit',
    principals: ['alice'],
    validAfter: new Date('2025-01-01T00:00:00Z'),
    validBefore: new Date('2025-01-02T00:00:00Z'),
    ...overrides,
  };
}

describe('signSshCertificate', () => {
  it('lays the fields out in PROTOCOL.certkeys order with the given nonce and serial', async () => {
    const ca = await caKey({ type: 'ed25519' });
    const nonce = Buffer.alloc(32, 0xab);
    const signed = signSshCertificate(
      request({ nonce, serial: 0x0102030405060708n, type: 'host', principals: ['h1', 'h2'] }),
      ca.key,
    );
    const certType = 'ssh-ed25519-cert-v01@openssh.com';
    expect(signed.line).toBe(`${certType} ${signed.blob.toString('base64')}`);
    expect(signed.serial).toBe(0x0102030405060708n);
    const subjectKey = subjectBlob.subarray(4 + 'ssh-ed25519'.length);
    const expectedPrefix = Buffer.concat([
      sshString(certType),
      sshString(nonce),
      subjectKey,
      Buffer.from('0102030405060708', 'hex'),
      Buffer.from('00000002', 'hex'), // host
      sshString('sucrt_unit'),
      sshString(Buffer.concat([sshString('h1'), sshString('h2')])),
      Buffer.from(
        BigInt(Date.parse('2025-01-01T00:00:00Z') / 1000)
          .toString(16)
          .padStart(16, '0'),
        'hex',
      ),
      Buffer.from(
        BigInt(Date.parse('2025-01-02T00:00:00Z') / 1000)
          .toString(16)
          .padStart(16, '0'),
        'hex',
      ),
      sshString(''), // critical options
      sshString(''), // extensions
      sshString(''), // reserved
      sshString(Buffer.from(ca.line.split(' ')[1] as string, 'base64')),
    ]);
    expect(signed.blob.subarray(0, expectedPrefix.length).equals(expectedPrefix)).toBe(true);
    const listed = sshKeygenList(signed.line);
    expect(listed.status).toBe(0);
    expect(listed.out).toContain(`Type: ${certType} host certificate`);
    expect(listed.out).toContain('Serial: 72623859790382856');
    expect(listed.out).toContain('Valid: from 2025-01-01T00:00:00 to 2025-01-02T00:00:00');
  });

  it('draws a random nonce and serial when none is given', async () => {
    const ca = await caKey({ type: 'ed25519' });
    const a = signSshCertificate(request(), ca.key);
    const b = signSshCertificate(request(), ca.key);
    expect(a.serial).not.toBe(b.serial);
    expect(a.blob.subarray(36, 68).equals(b.blob.subarray(36, 68))).toBe(false);
  });

  it('sorts critical options and extensions by name, nesting non-empty values as strings', async () => {
    const ca = await caKey({ type: 'ed25519' });
    const signed = signSshCertificate(
      request({
        criticalOptions: { 'source-address': '10.0.0.0/8', 'force-command': '/bin/true' },
        extensions: { 'permit-pty': '', 'b@example.com': 'v', 'permit-X11-forwarding': '' },
      }),
      ca.key,
    );
    const options = Buffer.concat([
      sshString('force-command'),
      sshString(sshString('/bin/true')),
      sshString('source-address'),
      sshString(sshString('10.0.0.0/8')),
    ]);
    // Byte order: '@'-free names sort after 'b@...', and 'X' (0x58) before 'p' (0x70).
    const extensions = Buffer.concat([
      sshString('b@example.com'),
      sshString(sshString('v')),
      sshString('permit-X11-forwarding'),
      sshString(''),
      sshString('permit-pty'),
      sshString(''),
    ]);
    expect(signed.blob.includes(Buffer.concat([sshString(options), sshString(extensions)]))).toBe(true);
    const listed = sshKeygenList(signed.line);
    expect(listed.status).toBe(0);
    expect(listed.out).toMatch(
      /Critical Options: \n\s+force-command \/bin\/true\n\s+source-address 10\.0\.0\.0\/8\n/,
    );
    expect(listed.out).toMatch(
      /Extensions: \n\s+b@example\.com UNKNOWN OPTION: 0000000176 \(len 5\)\n\s+permit-X11-forwarding\n\s+permit-pty\n/,
    );
  });

  it.each<[SshCaKeySpec, string]>([
    [{ type: 'ed25519' }, 'ssh-ed25519'],
    [{ type: 'ecdsa', curve: 'p256' }, 'ecdsa-sha2-nistp256'],
    [{ type: 'ecdsa', curve: 'p384' }, 'ecdsa-sha2-nistp384'],
    [{ type: 'ecdsa', curve: 'p521' }, 'ecdsa-sha2-nistp521'],
    [{ type: 'rsa', bits: 2048 }, 'rsa-sha2-512'],
  ])(
    'signs with a %j CA so that OpenSSH accepts the signature (%s) and rejects a changed byte',
    async (spec, algorithm) => {
      const ca = await caKey(spec);
      // Several signatures, so ECDSA r and s with the top bit set (mpint padding) occur with near certainty.
      for (let i = 0; i < 12; i++) {
        const signed = signSshCertificate(request({ keyId: `key-${i}` }), ca.key);
        const listed = sshKeygenList(signed.line);
        expect(listed.status, listed.out).toBe(0);
        expect(listed.out).toContain(`(using ${algorithm})`);
      }
      const signed = signSshCertificate(request({ keyId: 'tamper-me' }), ca.key);
      const at = signed.blob.indexOf(Buffer.from('tamper-me'));
      const tampered = Buffer.from(signed.blob);
      tampered[at] = (tampered[at] as number) ^ 0x20;
      const rejected = sshKeygenList(`${signed.line.split(' ')[0]} ${tampered.toString('base64')}`);
      expect(rejected.status).not.toBe(0);
      expect(rejected.out).toMatch(/incorrect signature/);
    },
  );

  it('refuses what cannot be a valid certificate', async () => {
    const ca = await caKey({ type: 'ed25519' });
    expect(() =>
      signSshCertificate(request({ validBefore: new Date('2025-01-01T00:00:00Z') }), ca.key),
    ).toThrow(/valid_before must be after valid_after/);
    expect(() =>
      signSshCertificate(request({ validAfter: new Date('1969-12-31T00:00:00Z') }), ca.key),
    ).toThrow(/valid_after must be a date on or after 1970/);
    expect(() =>
      signSshCertificate(request({ type: 'host', extensions: { 'permit-pty': '' } }), ca.key),
    ).toThrow(/host certificates have no critical options or extensions/);
    const dsa = Buffer.concat([sshString('ssh-dss'), sshString(Buffer.alloc(4))]);
    expect(() => signSshCertificate(request({ subjectPublicKeyBlob: dsa }), ca.key)).toThrow(
      /cannot certify a ssh-dss key/,
    );
  });
});
