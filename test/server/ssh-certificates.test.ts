import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgewardClient } from '../../src/client/index.js';
import { SshHostCertificates, SshUserCertificates } from '../../src/client/resources.js';
import { eventsOf } from '../support/events.js';
import {
  decodeCertificate,
  type KeyFiles,
  OpenSshWorkspace,
  tamperedCertificate,
  verifyCertificateSignature,
} from '../support/openssh.js';
import { countRows, walkPages } from '../support/paging.js';
import { ADMIN_KEY, idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let ssh: OpenSshWorkspace;

interface SshCa {
  id: string;
  public_key: string;
  key_type: string;
}
interface HostCertificate {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata: string;
  ssh_certificate_authority_id: string;
  public_key: string;
  key_type: string;
  principals: string[];
  valid_after: string;
  valid_until: string;
  certificate: string;
}
interface UserCertificate extends HostCertificate {
  critical_options: Record<string, string>;
  extensions: Record<string, string>;
}

const HOST_FIELDS = [
  'certificate',
  'created_at',
  'description',
  'id',
  'key_type',
  'metadata',
  'principals',
  'public_key',
  'ssh_certificate_authority_id',
  'uri',
  'valid_after',
  'valid_until',
];
const USER_FIELDS = [...HOST_FIELDS, 'critical_options', 'extensions'].sort();

/** CA key types, with what `ssh-keygen -L` shows for them: key type and signature algorithm. */
const CA_CASES = [
  { name: 'ed25519', body: {}, sshType: 'ED25519', algorithm: 'ssh-ed25519' },
  {
    name: 'ecdsa p256',
    body: { private_key_type: 'ecdsa' },
    sshType: 'ECDSA',
    algorithm: 'ecdsa-sha2-nistp256',
  },
  {
    name: 'ecdsa p384',
    body: { private_key_type: 'ecdsa', elliptic_curve: 'p384' },
    sshType: 'ECDSA',
    algorithm: 'ecdsa-sha2-nistp384',
  },
  {
    name: 'ecdsa p521',
    body: { private_key_type: 'ecdsa', elliptic_curve: 'p521' },
    sshType: 'ECDSA',
    algorithm: 'ecdsa-sha2-nistp521',
  },
  {
    name: 'rsa 2048',
    body: { private_key_type: 'rsa', key_size: 2048 },
    sshType: 'RSA',
    algorithm: 'rsa-sha2-512',
  },
  {
    name: 'rsa 4096 (default size)',
    body: { private_key_type: 'rsa' },
    sshType: 'RSA',
    algorithm: 'rsa-sha2-512',
  },
] as const;

/** Subject keys made by ssh-keygen, with the API's key_type and the certificate type OpenSSH names. */
const SUBJECT_CASES = [
  {
    name: 'ed25519',
    type: 'ed25519',
    bits: undefined,
    keyType: 'ed25519',
    certType: 'ssh-ed25519-cert-v01@openssh.com',
  },
  {
    name: 'ecdsa 256',
    type: 'ecdsa',
    bits: 256,
    keyType: 'ecdsa',
    certType: 'ecdsa-sha2-nistp256-cert-v01@openssh.com',
  },
  {
    name: 'ecdsa 384',
    type: 'ecdsa',
    bits: 384,
    keyType: 'ecdsa',
    certType: 'ecdsa-sha2-nistp384-cert-v01@openssh.com',
  },
  {
    name: 'ecdsa 521',
    type: 'ecdsa',
    bits: 521,
    keyType: 'ecdsa',
    certType: 'ecdsa-sha2-nistp521-cert-v01@openssh.com',
  },
  { name: 'rsa 3072', type: 'rsa', bits: 3072, keyType: 'rsa', certType: 'ssh-rsa-cert-v01@openssh.com' },
] as const;

const cas = new Map<string, SshCa>();
const subjects = new Map<string, KeyFiles>();

beforeAll(async () => {
  t = await startTestServer();
  ssh = new OpenSshWorkspace();
  for (const caCase of CA_CASES) {
    const created = await t.api<SshCa>('POST', '/ssh_certificate_authorities', caCase.body);
    expect(created.status).toBe(201);
    cas.set(caCase.name, created.body);
  }
  for (const subject of SUBJECT_CASES) subjects.set(subject.name, ssh.keygen(subject.type, subject.bits));
});
afterAll(async () => {
  await t.stop();
  ssh.remove();
});

function ca(name = 'ed25519'): SshCa {
  return cas.get(name) as SshCa;
}
function subject(name = 'ed25519'): KeyFiles {
  return subjects.get(name) as KeyFiles;
}

const seconds = (rfc3339: string) => Math.floor(Date.parse(rfc3339) / 1000);
const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

async function createHost(body: Record<string, unknown>): Promise<HostCertificate> {
  const created = await t.api<HostCertificate>('POST', '/ssh_host_certificates', body);
  expect(created.status, created.text).toBe(201);
  return created.body;
}
async function createUser(body: Record<string, unknown>): Promise<UserCertificate> {
  const created = await t.api<UserCertificate>('POST', '/ssh_user_certificates', body);
  expect(created.status, created.text).toBe(201);
  return created.body;
}

describe('SSH certificates are genuine OpenSSH certificates', () => {
  for (const caCase of CA_CASES) {
    for (const subjectCase of SUBJECT_CASES) {
      it(`host certificate: ${caCase.name} CA signs a ${subjectCase.name} key`, async () => {
        const authority = ca(caCase.name);
        const key = subject(subjectCase.name);
        const cert = await createHost({
          ssh_certificate_authority_id: authority.id,
          public_key: key.line,
          principals: ['web-1.example.com', '10.1.2.3'],
          // An offset is converted to UTC; the fraction is dropped (certificates count seconds).
          valid_after: '2024-05-01T14:00:00.750+02:00',
          valid_until: '2034-05-01T12:00:00Z',
        });
        expect(cert.key_type).toBe(subjectCase.keyType);
        expect(cert.valid_after).toBe('2024-05-01T12:00:00Z');
        expect(cert.valid_until).toBe('2034-05-01T12:00:00Z');
        expect(cert.certificate.startsWith(`${subjectCase.certType} AAAA`)).toBe(true);

        const listed = ssh.listCertificate(cert.certificate);
        expect(listed.type).toBe(`${subjectCase.certType} host certificate`);
        expect(listed.publicKey).toMatch(new RegExp(` ${key.fingerprint.replace(/[+/]/g, '\\$&')}$`));
        expect(listed.signingCa).toEqual({
          type: caCase.sshType,
          fingerprint: ssh.fingerprint(authority.public_key),
          algorithm: caCase.algorithm,
        });
        expect(listed.keyId).toBe(`"${cert.id}"`);
        expect(listed.validFrom).toBe(cert.valid_after);
        expect(listed.validTo).toBe(cert.valid_until);
        expect(listed.principals).toEqual(['web-1.example.com', '10.1.2.3']);
        expect(listed.criticalOptions).toEqual({});
        expect(listed.extensions).toEqual({});

        // The fields again, read from the bytes by our own reader, and the signature checked by node:crypto.
        const decoded = decodeCertificate(cert.certificate);
        expect(listed.serial).toBe(decoded.serial.toString());
        expect(decoded.type).toBe(2);
        expect(decoded.nonce).toHaveLength(32);
        expect(decoded.reserved).toHaveLength(0);
        expect(decoded.subjectBlob.equals(Buffer.from(key.line.split(' ')[1] as string, 'base64'))).toBe(
          true,
        );
        expect(verifyCertificateSignature(cert.certificate, authority.public_key)).toBe(caCase.algorithm);
        // A flipped bit in the signed part: both OpenSSH and the independent check refuse it.
        const tampered = tamperedCertificate(cert.certificate);
        expect(() => ssh.listCertificate(tampered)).toThrow(/incorrect signature/);
        expect(verifyCertificateSignature(tampered, authority.public_key)).toBe(false);
      });

      it(`user certificate: ${caCase.name} CA signs a ${subjectCase.name} key`, async () => {
        const authority = ca(caCase.name);
        const key = subject(subjectCase.name);
        const now = Date.now();
        const cert = await createUser({
          ssh_certificate_authority_id: authority.id,
          public_key: key.line,
          principals: ['alice', 'deploy'],
          valid_after: iso(now - 60_000),
          valid_until: iso(now + 3_600_000),
          critical_options: { 'source-address': '10.0.0.0/8,192.168.1.7', 'force-command': '/bin/true' },
          extensions: { 'permit-pty': '', 'permit-port-forwarding': '' },
        });
        expect(cert.key_type).toBe(subjectCase.keyType);
        expect(cert.critical_options).toEqual({
          'force-command': '/bin/true',
          'source-address': '10.0.0.0/8,192.168.1.7',
        });
        // Sorted by name, as in the certificate.
        expect(Object.keys(cert.critical_options)).toEqual(['force-command', 'source-address']);

        const listed = ssh.listCertificate(cert.certificate);
        expect(listed.type).toBe(`${subjectCase.certType} user certificate`);
        expect(listed.signingCa).toEqual({
          type: caCase.sshType,
          fingerprint: ssh.fingerprint(authority.public_key),
          algorithm: caCase.algorithm,
        });
        expect(listed.keyId).toBe(`"${cert.id}"`);
        expect(listed.validFrom).toBe(cert.valid_after);
        expect(listed.validTo).toBe(cert.valid_until);
        expect(listed.principals).toEqual(['alice', 'deploy']);
        expect(listed.criticalOptions).toEqual({
          'force-command': '/bin/true',
          'source-address': '10.0.0.0/8,192.168.1.7',
        });
        expect(listed.extensions).toEqual({ 'permit-port-forwarding': '', 'permit-pty': '' });
        expect(decodeCertificate(cert.certificate).type).toBe(1);
        expect(verifyCertificateSignature(cert.certificate, authority.public_key)).toBe(caCase.algorithm);

        // OpenSSH accepts a signature made with this certificate only if the CA really signed it.
        const accepted = ssh.signAndVerifyWithCertificate(
          key,
          cert.certificate,
          authority.public_key,
          'alice',
        );
        expect(accepted.output).toMatch(/Good "file" signature for alice with [A-Z0-9]+-CERT key/);
        expect(accepted.status).toBe(0);
        const otherCa = ca(caCase.name === 'ed25519' ? 'ecdsa p256' : 'ed25519');
        const wrongCa = ssh.signAndVerifyWithCertificate(key, cert.certificate, otherCa.public_key, 'alice');
        expect(wrongCa.status).not.toBe(0);
        const wrongPrincipal = ssh.signAndVerifyWithCertificate(
          key,
          cert.certificate,
          authority.public_key,
          'mallory',
        );
        expect(wrongPrincipal.status).not.toBe(0);
      });
    }
  }
});

describe('SSH host certificates', () => {
  it('has the wire shape of the spec and reads back, lists, patches and deletes', async () => {
    const created = await t.api<HostCertificate>('POST', '/ssh_host_certificates', {
      ssh_certificate_authority_id: ca().id,
      public_key: `  ${subject().line}\n`,
      principals: ['db.internal'],
      description: 'db host',
      metadata: '{"rack":4}',
    });
    expect(created.status).toBe(201);
    const cert = created.body;
    expect(Object.keys(cert).sort()).toEqual(HOST_FIELDS);
    expect(cert.id).toMatch(idPattern('shcrt'));
    expect(cert.uri).toBe(`${t.baseUrl}/ssh_host_certificates/${cert.id}`);
    expect(cert.created_at).toMatch(RFC3339_UTC);
    expect(cert.description).toBe('db host');
    expect(cert.metadata).toBe('{"rack":4}');
    expect(cert.ssh_certificate_authority_id).toBe(ca().id);
    expect(cert.public_key).toBe(subject().line);
    expect(cert.key_type).toBe('ed25519');
    expect(cert.principals).toEqual(['db.internal']);
    expect(cert.valid_after).toMatch(RFC3339_UTC);
    expect(cert.valid_until).toMatch(RFC3339_UTC);
    expect(cert.certificate).toMatch(/^ssh-ed25519-cert-v01@openssh\.com AAAA[A-Za-z0-9+/]+=*$/);

    expect((await t.api('GET', `/ssh_host_certificates/${cert.id}`)).body).toEqual(cert);
    const patched = await t.api<HostCertificate>('PATCH', `/ssh_host_certificates/${cert.id}`, {
      description: 'db primary',
      metadata: '',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...cert, description: 'db primary', metadata: '' });
    const listed = await t.api<{
      ssh_host_certificates: HostCertificate[];
      uri: string;
      next_page_uri: null;
    }>('GET', '/ssh_host_certificates');
    expect(listed.status).toBe(200);
    expect(listed.body.uri).toBe(`${t.baseUrl}/ssh_host_certificates`);
    expect(listed.body.ssh_host_certificates).toContainEqual(patched.body);

    const deleted = await t.api('DELETE', `/ssh_host_certificates/${cert.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await t.api('GET', `/ssh_host_certificates/${cert.id}`)).status).toBe(404);
  });

  it('defaults: valid from creation for one year, valid for every host', async () => {
    const before = Math.floor(Date.now() / 1000);
    const cert = await createHost({ ssh_certificate_authority_id: ca().id, public_key: subject().line });
    const after = Math.ceil(Date.now() / 1000);
    expect(cert.principals).toEqual([]);
    expect(cert.description).toBe('');
    expect(cert.metadata).toBe('');
    expect(cert.valid_after).toBe(cert.created_at);
    expect(seconds(cert.valid_after)).toBeGreaterThanOrEqual(before);
    expect(seconds(cert.valid_after)).toBeLessThanOrEqual(after);
    const oneYearLater = new Date(cert.created_at);
    oneYearLater.setUTCFullYear(oneYearLater.getUTCFullYear() + 1);
    expect(cert.valid_until).toBe(iso(oneYearLater.getTime()));
    const listed = ssh.listCertificate(cert.certificate);
    expect(listed.principals).toEqual([]);
    expect(listed.validFrom).toBe(cert.valid_after);
    expect(listed.validTo).toBe(cert.valid_until);
    const decoded = decodeCertificate(cert.certificate);
    expect(decoded.principals).toEqual([]);
    expect(Number(decoded.validBefore - decoded.validAfter)).toBeGreaterThanOrEqual(365 * 86400);
  });

  it('gives each certificate a fresh nonce and serial', async () => {
    const body = { ssh_certificate_authority_id: ca().id, public_key: subject().line };
    const a = decodeCertificate((await createHost(body)).certificate);
    const b = decodeCertificate((await createHost(body)).certificate);
    expect(a.nonce.equals(b.nonce)).toBe(false);
    expect(a.serial).not.toBe(b.serial);
  });

  it('refuses critical options and extensions, which host certificates do not have', async () => {
    for (const field of ['critical_options', 'extensions']) {
      const response = await t.api('POST', '/ssh_host_certificates', {
        ssh_certificate_authority_id: ca().id,
        public_key: subject().line,
        [field]: {},
      });
      expect(response.status).toBe(400);
      expect(response.body.msg).toBe(`${field}: unknown field`);
    }
  });
});

describe('SSH user certificates', () => {
  it('has the wire shape of the spec and reads back, lists, patches and deletes', async () => {
    const cert = await createUser({
      ssh_certificate_authority_id: ca('ecdsa p256').id,
      public_key: subject('rsa 3072').line,
      principals: ['root'],
      description: 'break glass',
    });
    expect(Object.keys(cert).sort()).toEqual(USER_FIELDS);
    expect(cert.id).toMatch(idPattern('sucrt'));
    expect(cert.uri).toBe(`${t.baseUrl}/ssh_user_certificates/${cert.id}`);
    expect(cert.key_type).toBe('rsa');
    expect(cert.ssh_certificate_authority_id).toBe(ca('ecdsa p256').id);
    expect(cert.critical_options).toEqual({});
    expect(cert.certificate).toMatch(/^ssh-rsa-cert-v01@openssh\.com AAAA/);
    expect((await t.api('GET', `/ssh_user_certificates/${cert.id}`)).body).toEqual(cert);
    const patched = await t.api<UserCertificate>('PATCH', `/ssh_user_certificates/${cert.id}`, {
      metadata: '{}',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...cert, metadata: '{}' });
    const listed = await t.api<{ ssh_user_certificates: UserCertificate[] }>('GET', '/ssh_user_certificates');
    expect(listed.body.ssh_user_certificates).toContainEqual(patched.body);
    expect((await t.api('DELETE', `/ssh_user_certificates/${cert.id}`)).status).toBe(204);
    expect((await t.api('GET', `/ssh_user_certificates/${cert.id}`)).status).toBe(404);
  });

  it('defaults: valid from creation for 24 hours, any user, permit-pty and permit-user-rc', async () => {
    const cert = await createUser({ ssh_certificate_authority_id: ca().id, public_key: subject().line });
    expect(cert.principals).toEqual([]);
    expect(cert.valid_after).toBe(cert.created_at);
    expect(seconds(cert.valid_until) - seconds(cert.valid_after)).toBe(24 * 3600);
    expect(cert.critical_options).toEqual({});
    expect(cert.extensions).toEqual({ 'permit-pty': '', 'permit-user-rc': '' });
    const listed = ssh.listCertificate(cert.certificate);
    expect(listed.principals).toEqual([]);
    expect(listed.criticalOptions).toEqual({});
    expect(listed.extensions).toEqual({ 'permit-pty': '', 'permit-user-rc': '' });
    expect(listed.validTo).toBe(cert.valid_until);
  });

  it('takes an explicit empty extensions map as none', async () => {
    const cert = await createUser({
      ssh_certificate_authority_id: ca().id,
      public_key: subject().line,
      extensions: {},
    });
    expect(cert.extensions).toEqual({});
    expect(ssh.listCertificate(cert.certificate).extensions).toEqual({});
    expect(decodeCertificate(cert.certificate).extensions).toEqual([]);
  });

  it('encodes every OpenSSH extension and vendor extensions with values, sorted by name', async () => {
    const cert = await createUser({
      ssh_certificate_authority_id: ca('rsa 2048').id,
      public_key: subject('ecdsa 384').line,
      extensions: {
        'permit-user-rc': '',
        'permit-X11-forwarding': '',
        'permit-agent-forwarding': '',
        'no-touch-required': '',
        'permit-pty': '',
        'permit-port-forwarding': '',
        'login@example.com': 'alice',
        'flag@example.com': '',
      },
    });
    const order = [
      'flag@example.com',
      'login@example.com',
      'no-touch-required',
      'permit-X11-forwarding',
      'permit-agent-forwarding',
      'permit-port-forwarding',
      'permit-pty',
      'permit-user-rc',
    ];
    expect(Object.keys(cert.extensions)).toEqual(order);
    const decoded = decodeCertificate(cert.certificate);
    expect(decoded.extensions.map(([name]) => name)).toEqual(order);
    // Flags carry empty data; a value is an SSH string inside the data field.
    const data = Object.fromEntries(decoded.extensions.map(([name, value]) => [name, value.toString('hex')]));
    expect(data['permit-pty']).toBe('');
    expect(data['flag@example.com']).toBe('');
    expect(data['login@example.com']).toBe(`00000005${Buffer.from('alice').toString('hex')}`);
    const listed = ssh.listCertificate(cert.certificate);
    expect(Object.keys(listed.extensions)).toEqual(order);
    expect(listed.extensions['login@example.com']).toBe(
      `UNKNOWN OPTION: 00000005${Buffer.from('alice').toString('hex')} (len 9)`,
    );
  });

  it('accepts each critical option alone, with IPv6 and single addresses', async () => {
    for (const [options, shown] of [
      [{ 'force-command': 'internal-sftp -R' }, { 'force-command': 'internal-sftp -R' }],
      [
        { 'source-address': '2001:db8::/32,::1,203.0.113.9' },
        { 'source-address': '2001:db8::/32,::1,203.0.113.9' },
      ],
    ] as const) {
      const cert = await createUser({
        ssh_certificate_authority_id: ca().id,
        public_key: subject().line,
        critical_options: options,
      });
      expect(cert.critical_options).toEqual(shown);
      expect(ssh.listCertificate(cert.certificate).criticalOptions).toEqual(shown);
    }
  });
});

describe('SSH certificate validation', () => {
  const paths = ['/ssh_host_certificates', '/ssh_user_certificates'] as const;

  async function expect400(
    path: string,
    body: Record<string, unknown>,
    message: RegExp,
    code = 'ERR_EDGEWARD_100',
  ) {
    const real = await t.api('POST', path, body);
    expect(real.status, `${path} ${JSON.stringify(body)}: ${real.text}`).toBe(400);
    expect(real.body).toMatchObject({ error_code: code, status_code: 400 });
    expect(real.body.msg, JSON.stringify(body)).toMatch(message);
  }

  it('refuses an unknown or malformed CA id, naming ssh_certificate_authority_id', async () => {
    for (const path of paths) {
      const base = { public_key: subject().line };
      await expect400(
        path,
        { ...base, ssh_certificate_authority_id: 'sshca_00000000000000000000000000' },
        /^ssh_certificate_authority_id: no SSH certificate authority with id 'sshca_00000000000000000000000000' exists/,
        'ERR_EDGEWARD_103',
      );
      await expect400(
        path,
        { ...base, ssh_certificate_authority_id: 'ca_123' },
        /^ssh_certificate_authority_id: must be an id starting with 'sshca_'/,
      );
      await expect400(path, base, /^ssh_certificate_authority_id: is required/);
    }
  });

  it('refuses bad public keys, private keys and certificates, naming public_key', async () => {
    const rsa1024 = ssh.keygen('rsa', 1024);
    const dsa = (() => {
      try {
        return ssh.keygen('dsa');
      } catch {
        return undefined; // an OpenSSH built without DSA
      }
    })();
    const privateKey = readFileSync(subject().path, 'utf8');
    // The same ECDSA public key as PEM (SPKI), as ssh-keygen exports it.
    const pem = execFileSync('ssh-keygen', ['-e', '-m', 'PKCS8', '-f', `${subject('ecdsa 256').path}.pub`], {
      encoding: 'utf8',
    });
    const existing = await createHost({ ssh_certificate_authority_id: ca().id, public_key: subject().line });
    const cases: [unknown, RegExp][] = [
      ['not a key', /^public_key: is not an SSH public key/],
      ['ssh-ed25519 AAAAnotbase64!!', /^public_key: is not a readable OpenSSH public key/],
      [rsa1024.line, /^public_key: is a 1024-bit RSA key; RSA keys must have at least 2048 bits/],
      [privateKey, /^public_key: is a private key; send only the public key/],
      [existing.certificate, /^public_key: is an OpenSSH certificate; send the plain public key to certify/],
      [pem, /^public_key: must be an OpenSSH authorized_keys line/],
      [
        `${subject().line}\n${subject('ecdsa 256').line}`,
        /^public_key: must be a single key on a single line/,
      ],
      ['', /^public_key: is required/],
      ['   ', /^public_key: is required/],
      [42, /^public_key: must be a string, got number/],
      [`ssh-ed25519 ${'A'.repeat(17000)}`, /^public_key: must be at most 16384 bytes/],
    ];
    if (dsa)
      cases.push([dsa.line, /^public_key: is a dsa key; only ed25519, ecdsa and rsa keys are accepted/]);
    for (const path of paths) {
      for (const [publicKey, message] of cases) {
        await expect400(path, { ssh_certificate_authority_id: ca().id, public_key: publicKey }, message);
      }
      await expect400(path, { ssh_certificate_authority_id: ca().id }, /^public_key: is required/);
    }
  });

  it('refuses bad principals', async () => {
    const base = { ssh_certificate_authority_id: ca().id, public_key: subject().line };
    for (const path of paths) {
      await expect400(path, { ...base, principals: 'alice' }, /^principals: must be an array, got string/);
      await expect400(path, { ...base, principals: ['alice', ''] }, /^principals\[1\]: must not be empty/);
      await expect400(
        path,
        { ...base, principals: ['a', 'b', 'a'] },
        /^principals\[2\]: duplicates principals\[0\]/,
      );
      await expect400(
        path,
        { ...base, principals: ['bad\nname'] },
        /^principals\[0\]: must not contain control characters/,
      );
      await expect400(
        path,
        { ...base, principals: ['x'.repeat(256)] },
        /^principals\[0\]: must be at most 255 bytes/,
      );
      await expect400(path, { ...base, principals: [7] }, /^principals\[0\]: must be a string, got number/);
      const many = Array.from({ length: 257 }, (_, i) => `p${i}`);
      await expect400(path, { ...base, principals: many }, /^principals: must have at most 256 entries/);
      expect((await t.api('POST', path, { ...base, principals: many.slice(0, 256) })).status).toBe(201);
    }
  });

  it('refuses bad validity times, naming the field', async () => {
    const base = { ssh_certificate_authority_id: ca().id, public_key: subject().line };
    for (const path of paths) {
      await expect400(
        path,
        { ...base, valid_after: '2030-01-02T00:00:00Z', valid_until: '2030-01-01T00:00:00Z' },
        /^valid_until: must be after valid_after; got 2030-01-01T00:00:00Z, not after 2030-01-02T00:00:00Z/,
      );
      await expect400(
        path,
        { ...base, valid_after: '2030-01-01T00:00:00Z', valid_until: '2030-01-01T01:00:00+01:00' },
        /^valid_until: must be after valid_after/,
      );
      await expect400(
        path,
        { ...base, valid_after: '2999-01-01T00:00:00Z' },
        /^valid_until: must be after valid_after; .*\(when omitted it is (one year|24 hours) after creation\)/,
      );
      for (const field of ['valid_after', 'valid_until']) {
        for (const value of [
          'tomorrow',
          '2030-02-30T00:00:00Z',
          '2030-01-01',
          '2030-01-01 00:00:00Z',
          '2030-01-01T24:00:00Z',
          '2030-01-01T00:00:60Z',
          '2030-01-01T00:00:00',
          '2030-13-01T00:00:00Z',
          '2030-01-01T00:00:00+25:00',
        ]) {
          await expect400(
            path,
            { ...base, [field]: value },
            new RegExp(`^${field}: must be an RFC 3339 date-time`),
          );
        }
        await expect400(
          path,
          { ...base, [field]: '1969-12-31T23:59:59Z' },
          new RegExp(`^${field}: must not be before 1970`),
        );
        await expect400(
          path,
          { ...base, [field]: 1700000000 },
          new RegExp(`^${field}: must be a string, got number`),
        );
      }
      // Leap day and lowercase separators are RFC 3339 too.
      const leap = await t.api('POST', path, {
        ...base,
        valid_after: '2028-02-29t10:00:00z',
        valid_until: '2028-03-01T10:00:00-05:30',
      });
      expect(leap.status).toBe(201);
      expect(leap.body).toMatchObject({
        valid_after: '2028-02-29T10:00:00Z',
        valid_until: '2028-03-01T15:30:00Z',
      });
    }
  });

  it('refuses critical options OpenSSH does not define and bad values, naming critical_options.<name>', async () => {
    const base = { ssh_certificate_authority_id: ca().id, public_key: subject().line };
    const path = '/ssh_user_certificates';
    for (const [options, message] of [
      [
        { 'permit-pty': '' },
        /^critical_options\.permit-pty: is not a critical option; OpenSSH defines only force-command and source-address/,
      ],
      [{ 'verify-required': '' }, /^critical_options\.verify-required: is not a critical option/],
      [{ 'force-command': '' }, /^critical_options\.force-command: must not be empty/],
      [{ 'force-command': 1 }, /^critical_options\.force-command: must be a string, got number/],
      [
        { 'source-address': '10.0.0.1/8' },
        /^critical_options\.source-address: '10\.0\.0\.1\/8' has host bits set/,
      ],
      [
        { 'source-address': '10.0.0.0/8, 1.2.3.4' },
        /^critical_options\.source-address: ' 1\.2\.3\.4' is not an IP address or CIDR/,
      ],
      [
        { 'source-address': '10.0.0.0/8,' },
        /^critical_options\.source-address: must be a comma-separated list .*no empty entries/,
      ],
      [{ 'source-address': '*' }, /^critical_options\.source-address: '\*' is not an IP address or CIDR/],
      [
        { 'source-address': 'fe80::1%eth0' },
        /^critical_options\.source-address: 'fe80::1%eth0' is not an IP address/,
      ],
      [
        { 'source-address': '10.0.0.0/33' },
        /^critical_options\.source-address: '10\.0\.0\.0\/33' prefix length must be 0\.\.32/,
      ],
      [
        { 'source-address': 'example.com' },
        /^critical_options\.source-address: 'example\.com' is not an IP address or CIDR/,
      ],
      [{ 'force-command': 'x'.repeat(4097) }, /^critical_options\.force-command: must be at most 4096 bytes/],
      [['force-command'], /^critical_options: must be an? (record|object)/],
    ] as const) {
      await expect400(path, { ...base, critical_options: options }, message);
    }
  });

  it('refuses extensions OpenSSH does not define and values on flags, naming extensions.<name>', async () => {
    const base = { ssh_certificate_authority_id: ca().id, public_key: subject().line };
    const path = '/ssh_user_certificates';
    for (const [extensions, message] of [
      [{ 'permit-everything': '' }, /^extensions\.permit-everything: is not an extension OpenSSH defines/],
      [{ 'PERMIT-PTY': '' }, /^extensions\.PERMIT-PTY: is not an extension OpenSSH defines/],
      [{ 'permit-x11-forwarding': '' }, /^extensions\.permit-x11-forwarding: is not an extension/],
      [{ 'force-command': '/bin/sh' }, /^extensions\.force-command: is not an extension/],
      [{ '@example.com': '' }, /^extensions\.@example\.com: is not an extension/],
      [{ 'name@': '' }, /^extensions\.name@: is not an extension/],
      [{ 'has space@example.com': '' }, /^extensions\.has space@example\.com: is not an extension/],
      [{ 'permit-pty': 'yes' }, /^extensions\.permit-pty: is a flag; its value must be the empty string/],
      [{ 'permit-pty': true }, /^extensions\.permit-pty: must be a string, got boolean/],
      [{ 'v@example.com': 'x'.repeat(4097) }, /^extensions\.v@example\.com: must be at most 4096 bytes/],
      [{ [`${'n'.repeat(250)}@example.com`]: '' }, /name must be at most 255 bytes/],
      [
        Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`e${i}@example.com`, ''])),
        /^extensions: must have at most 64 entries/,
      ],
    ] as const) {
      await expect400(path, { ...base, extensions }, message);
    }
  });

  it('refuses unknown fields and over-long description or metadata', async () => {
    const base = { ssh_certificate_authority_id: ca().id, public_key: subject().line };
    for (const path of paths) {
      await expect400(path, { ...base, serial: 5 }, /^serial: unknown field/);
      await expect400(path, { ...base, key_id: 'x' }, /^key_id: unknown field/);
      await expect400(
        path,
        { ...base, valid_before: '2030-01-01T00:00:00Z' },
        /^valid_before: unknown field/,
      );
      await expect400(
        path,
        { ...base, description: 'é'.repeat(128) },
        /^description: must be at most 255 bytes/,
      );
      await expect400(path, { ...base, metadata: 'x'.repeat(4097) }, /^metadata: must be at most 4096 bytes/);
    }
  });

  it('patches only description and metadata, and answers 404 for unknown ids', async () => {
    const host = await createHost({ ssh_certificate_authority_id: ca().id, public_key: subject().line });
    const user = await createUser({ ssh_certificate_authority_id: ca().id, public_key: subject().line });
    for (const [path, id, prefix] of [
      ['/ssh_host_certificates', host.id, 'shcrt'],
      ['/ssh_user_certificates', user.id, 'sucrt'],
    ] as const) {
      for (const field of [
        'principals',
        'valid_until',
        'public_key',
        'certificate',
        'ssh_certificate_authority_id',
      ]) {
        const response = await t.api('PATCH', `${path}/${id}`, { [field]: 'x' });
        expect(response.status).toBe(400);
        expect(response.body.msg).toBe(`${field}: unknown field`);
      }
      const unknown = `${prefix}_00000000000000000000000000`;
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { description: 'x' }],
        ['DELETE', undefined],
      ] as const) {
        const response = await t.api(method, `${path}/${unknown}`, body);
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400' });
        expect(response.body.msg).toContain(unknown);
      }
    }
  });
});

describe('SSH certificate events, paging, idempotency and client', () => {
  it('records created, updated and deleted events for host and user certificates', async () => {
    for (const [path, resource] of [
      ['/ssh_host_certificates', 'ssh_host_certificate'],
      ['/ssh_user_certificates', 'ssh_user_certificate'],
    ] as const) {
      const created = await t.api<HostCertificate>('POST', path, {
        ssh_certificate_authority_id: ca().id,
        public_key: subject().line,
      });
      await t.api('PATCH', `${path}/${created.body.id}`, { description: 'renamed' });
      await t.api('DELETE', `${path}/${created.body.id}`);
      const events = await eventsOf(t, created.body.id);
      expect(events.map((event) => event.type)).toEqual([
        `${resource}_created.v0`,
        `${resource}_updated.v0`,
        `${resource}_deleted.v0`,
      ]);
      expect(JSON.parse(events[0]?.payload ?? '{}')).toEqual({ object: created.body });
    }
  });

  it('lists newest first and pages with limit and before_id', async () => {
    for (const [path, key] of [
      ['/ssh_host_certificates', 'ssh_host_certificates'],
      ['/ssh_user_certificates', 'ssh_user_certificates'],
    ] as const) {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const created = await t.api<HostCertificate>('POST', path, {
          ssh_certificate_authority_id: ca().id,
          public_key: subject().line,
          description: `page-${i}`,
        });
        ids.push(created.body.id);
      }
      const { seen, pages } = await walkPages<
        Record<typeof key, HostCertificate[]> & { next_page_uri: string | null }
      >(t, `${path}?limit=3`, key as never, (page) => {
        expect(page.body[key].length).toBeLessThanOrEqual(3);
        if (page.body.next_page_uri)
          expect(page.body.next_page_uri).toMatch(new RegExp(`^${t.baseUrl}${path}\\?`));
      });
      expect(seen).toHaveLength(await countRows(t, key));
      expect(pages).toBe(Math.ceil(seen.length / 3));
      expect(seen.filter((id) => ids.includes(id))).toEqual([...ids].reverse());
    }
  });

  it('returns the same certificate for a retried create with the same Idempotency-Key', async () => {
    const body = { ssh_certificate_authority_id: ca().id, public_key: subject().line, principals: ['once'] };
    const headers = { 'idempotency-key': 'ssh-user-cert-once' };
    const first = await t.api<UserCertificate>('POST', '/ssh_user_certificates', body, { headers });
    const retry = await t.api<UserCertificate>('POST', '/ssh_user_certificates', body, { headers });
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
  });

  it('is reachable through the typed client', async () => {
    const client = new EdgewardClient({ baseUrl: t.baseUrl, apiKey: ADMIN_KEY });
    try {
      expect(client.sshHostCertificates).toBeInstanceOf(SshHostCertificates);
      expect(client.sshUserCertificates).toBeInstanceOf(SshUserCertificates);
      const host = await client.sshHostCertificates.create({
        ssh_certificate_authority_id: ca().id,
        public_key: subject().line,
        principals: ['client.example.com'],
      });
      expect(ssh.listCertificate(host.certificate).principals).toEqual(['client.example.com']);
      const user = await client.sshUserCertificates.create({
        ssh_certificate_authority_id: ca().id,
        public_key: subject().line,
        critical_options: { 'force-command': '/bin/true' },
      });
      expect(user.extensions).toEqual({ 'permit-pty': '', 'permit-user-rc': '' });
      expect((await client.sshUserCertificates.update(user.id, { description: 'c' })).description).toBe('c');
      const seen: string[] = [];
      for await (const item of client.sshHostCertificates.iterate({ limit: 5 })) seen.push(item.id);
      expect(seen).toContain(host.id);
      await client.sshHostCertificates.delete(host.id);
      await expect(client.sshHostCertificates.get(host.id)).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await client.close();
    }
  });
});
