import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgewardClient } from '../../src/client/index.js';
import { SecretBox } from '../../src/crypto/secret-box.js';
import { loadSecretKey } from '../../src/crypto/secret-key-file.js';
import { eventsOf } from '../support/events.js';
import {
  attributeOf,
  ipNumbers,
  mapNames,
  OPENSSL_EXTENDED_KEY_USAGE,
  OPENSSL_KEY_USAGE,
  type OpensslCertificate,
  OpensslWorkspace,
  openssl,
  opensslView,
  rfc3339Seconds,
} from '../support/openssl.js';
import { countRows, walkPages } from '../support/paging.js';
import { ADMIN_KEY, idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';
import { storedData } from '../support/stored-data.js';

let t: TestServer;
let ws: OpensslWorkspace;
let root: OpensslCertificate;
let intermediate: OpensslCertificate;
let leaf: OpensslCertificate;
let edLeaf: OpensslCertificate;
let ecLeaf: OpensslCertificate;
let unrelatedCa: OpensslCertificate;

const TLS_KEYS = [
  'certificate_pem',
  'created_at',
  'description',
  'extended_key_usages',
  'id',
  'issued_at',
  'issuer_common_name',
  'key_usages',
  'metadata',
  'not_after',
  'not_before',
  'private_key_type',
  'serial_number',
  'subject_alternative_names',
  'subject_common_name',
  'subject_country',
  'subject_locality',
  'subject_organization',
  'subject_organizational_unit',
  'subject_province',
  'uri',
];

/** A serial with its high bit set: DER pads it with a zero byte that the API must not show. */
const LEAF_SERIAL = '80a1b2c3d4e5f60718293a4b5c6d7e8f';

beforeAll(async () => {
  t = await startTestServer();
  ws = new OpensslWorkspace();
  const caExtensions = [
    'basicConstraints = critical,CA:TRUE',
    'keyUsage = critical,keyCertSign,cRLSign',
    'subjectKeyIdentifier = hash',
  ];
  root = ws.certificate({
    subject: '/O=Acme/CN=Acme Root',
    key: ws.key('rsa'),
    extensions: caExtensions,
    days: 365,
  });
  intermediate = ws.certificate({
    subject: '/O=Acme/CN=Acme Issuing EC',
    key: ws.key('ec'),
    issuer: root,
    extensions: [...caExtensions, 'authorityKeyIdentifier = keyid'],
    days: 200,
  });
  leaf = ws.certificate({
    subject: '/C=US/ST=California/L=San Francisco/O=Acme, Inc./OU=Edge Team/CN=leaf.example.com',
    key: ws.key('rsa'),
    issuer: intermediate,
    serial: `0x${LEAF_SERIAL}`,
    days: 90,
    extensions: [
      'basicConstraints = critical,CA:FALSE',
      'keyUsage = critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage = serverAuth,clientAuth',
      'subjectAltName = DNS:leaf.example.com,DNS:*.apps.example.com,IP:192.0.2.10,IP:2001:db8::10',
      'authorityKeyIdentifier = keyid',
    ],
  });
  edLeaf = ws.certificate({
    subject: '/CN=ed.example.com',
    key: ws.key('ed25519'),
    issuer: root,
    extensions: ['basicConstraints = CA:FALSE'],
  });
  ecLeaf = ws.certificate({
    subject: '/CN=ec.example.com',
    key: ws.key('ec'),
    issuer: root,
    extensions: ['basicConstraints = CA:FALSE', 'subjectAltName = IP:2001:db8:0:0:1:0:0:1'],
  });
  unrelatedCa = ws.certificate({ subject: '/CN=Other Root', key: ws.key('ec'), extensions: caExtensions });
});
afterAll(async () => {
  await t.stop();
  ws.cleanup();
});

/** Every field of the leaf as openssl reads it, in the API's form. */
function expectedFromOpenssl(certificate: OpensslCertificate) {
  const view = opensslView(certificate.path);
  const keyTypes: Record<string, string> = {
    rsaEncryption: 'rsa',
    'id-ecPublicKey': 'ecdsa',
    ED25519: 'ed25519',
  };
  return {
    subject_common_name: attributeOf(view.subject, 'CN'),
    not_before: rfc3339Seconds(view.notBefore),
    not_after: rfc3339Seconds(view.notAfter),
    key_usages: mapNames(view.keyUsage, OPENSSL_KEY_USAGE),
    extended_key_usages: mapNames(view.extendedKeyUsage, OPENSSL_EXTENDED_KEY_USAGE),
    private_key_type: keyTypes[view.publicKeyAlgorithm],
    issuer_common_name: attributeOf(view.issuer, 'CN'),
    serial_number: view.serial.toLowerCase(),
    subject_organization: attributeOf(view.subject, 'O'),
    subject_organizational_unit: attributeOf(view.subject, 'OU'),
    subject_locality: attributeOf(view.subject, 'L'),
    subject_province: attributeOf(view.subject, 'ST'),
    subject_country: attributeOf(view.subject, 'C'),
    sanDns: view.sanDns,
    sanIps: view.sanIps,
  };
}

function expectMatchesOpenssl(certificate: Record<string, unknown>, source: OpensslCertificate) {
  const { sanDns, sanIps, ...expected } = expectedFromOpenssl(source);
  expect(certificate).toMatchObject(expected);
  const names = certificate.subject_alternative_names as { dns_names: string[]; ips: string[] };
  expect(names.dns_names).toEqual(sanDns);
  expect(names.ips.map(ipNumbers)).toEqual(sanIps.map(ipNumbers));
}

/** The base64 lines of a PEM text: what a leak of its bytes would contain. */
function pemLines(pem: string): string[] {
  return pem.split('\n').filter((line) => line.length >= 32 && !line.startsWith('-----'));
}

/** The key as uploaded and as the PKCS#8 the server would hold: neither may appear anywhere. */
function keyLines(pem: string): string[] {
  const pkcs8 = openssl(['pkey'], pem);
  return [...pemLines(pem), ...pemLines(pkcs8)];
}

function expectNoKey(text: string, keyPem: string) {
  expect(text).not.toContain('PRIVATE KEY');
  expect(text).not.toContain('"private_key_pem"');
  for (const line of keyLines(keyPem)) expect(text).not.toContain(line);
}

describe('TLS certificates', () => {
  it('uploads a chain of three with an RSA leaf and derives every field as openssl reads it', async () => {
    const certificatePem = leaf.pem + intermediate.pem + root.pem;
    const created = await t.api('POST', '/tls_certificates', {
      certificate_pem: certificatePem,
      private_key_pem: leaf.key.pem,
      description: 'leaf',
      metadata: '{"env":"prod"}',
    });
    expect(created.status).toBe(201);
    const certificate = created.body;
    expect(Object.keys(certificate).sort()).toEqual(TLS_KEYS);
    expect(certificate.id).toMatch(idPattern('cert'));
    expect(certificate.uri).toBe(`${t.baseUrl}/tls_certificates/${certificate.id}`);
    expect(certificate.created_at).toMatch(RFC3339_UTC);
    expect(certificate.description).toBe('leaf');
    expect(certificate.metadata).toBe('{"env":"prod"}');
    expect(certificate.certificate_pem).toBe(certificatePem);
    expect(certificate.issued_at).toBeNull();
    expectMatchesOpenssl(certificate, leaf);
    // Literal values too, so a mistake shared by the test's openssl parsing cannot hide.
    expect(certificate).toMatchObject({
      subject_common_name: 'leaf.example.com',
      subject_alternative_names: {
        dns_names: ['leaf.example.com', '*.apps.example.com'],
        ips: ['192.0.2.10', '2001:db8::10'],
      },
      key_usages: ['digital_signature', 'key_encipherment'],
      extended_key_usages: ['server_auth', 'client_auth'],
      private_key_type: 'rsa',
      issuer_common_name: 'Acme Issuing EC',
      serial_number: LEAF_SERIAL,
      subject_organization: 'Acme, Inc.',
      subject_organizational_unit: 'Edge Team',
      subject_locality: 'San Francisco',
      subject_province: 'California',
      subject_country: 'US',
    });
    expect(Date.parse(certificate.not_after as string) - Date.parse(certificate.not_before as string)).toBe(
      90 * 86_400_000,
    );
    expectNoKey(created.text, leaf.key.pem);

    const fetched = await t.api('GET', `/tls_certificates/${certificate.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(certificate);
    expectNoKey(fetched.text, leaf.key.pem);
  });

  it('accepts a chain of two and a leaf alone', async () => {
    for (const certificatePem of [leaf.pem + intermediate.pem, leaf.pem]) {
      const created = await t.api('POST', '/tls_certificates', {
        certificate_pem: certificatePem,
        private_key_pem: leaf.key.pem,
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        subject_common_name: 'leaf.example.com',
        description: '',
        metadata: '',
      });
    }
  });

  it('uploads an Ed25519 leaf with an empty subject apart from its CN', async () => {
    const created = await t.api('POST', '/tls_certificates', {
      certificate_pem: edLeaf.pem + root.pem,
      private_key_pem: edLeaf.key.pem,
    });
    expect(created.status).toBe(201);
    expectMatchesOpenssl(created.body, edLeaf);
    expect(created.body).toMatchObject({
      private_key_type: 'ed25519',
      subject_common_name: 'ed.example.com',
      issuer_common_name: 'Acme Root',
      subject_alternative_names: { dns_names: [], ips: [] },
      key_usages: [],
      extended_key_usages: [],
      subject_organization: '',
      subject_organizational_unit: '',
      subject_locality: '',
      subject_province: '',
      subject_country: '',
    });
  });

  it('accepts traditional key encodings (SEC 1 with EC parameters, PKCS#1) and shows IPv6 in RFC 5952 form', async () => {
    // The layout `openssl ecparam -genkey` writes: the curve parameters, then the SEC 1 key.
    const sec1 = openssl(['ecparam', '-name', 'prime256v1']) + openssl(['ec'], ecLeaf.key.pem);
    expect(sec1).toContain('BEGIN EC PARAMETERS');
    expect(sec1).toContain('BEGIN EC PRIVATE KEY');
    const ec = await t.api('POST', '/tls_certificates', {
      certificate_pem: ecLeaf.pem,
      private_key_pem: sec1,
    });
    expect(ec.status).toBe(201);
    expect(ec.body.private_key_type).toBe('ecdsa');
    expectMatchesOpenssl(ec.body, ecLeaf);
    expect((ec.body.subject_alternative_names as { ips: string[] }).ips).toEqual(['2001:db8::1:0:0:1']);

    const pkcs1 = openssl(['rsa', '-traditional'], leaf.key.pem);
    expect(pkcs1).toContain('BEGIN RSA PRIVATE KEY');
    const rsa = await t.api('POST', '/tls_certificates', {
      certificate_pem: leaf.pem,
      private_key_pem: pkcs1,
    });
    expect(rsa.status).toBe(201);
    expect(rsa.body.private_key_type).toBe('rsa');
    expectNoKey(rsa.text, pkcs1);
  });

  it('rejects chains out of order, naming the certificates', async () => {
    const cases: Array<[string, string]> = [
      [
        root.pem + leaf.pem,
        'certificate_pem: certificate 2 is not the issuer of certificate 1; give the chain leaf first',
      ],
      [
        leaf.pem + root.pem,
        'certificate_pem: certificate 2 is not the issuer of certificate 1; give the chain leaf first',
      ],
      [
        leaf.pem + intermediate.pem + unrelatedCa.pem,
        'certificate_pem: certificate 3 is not the issuer of certificate 2; give the chain leaf first',
      ],
      [
        intermediate.pem + leaf.pem + root.pem,
        'certificate_pem: certificate 2 is not the issuer of certificate 1; give the chain leaf first',
      ],
    ];
    for (const [certificatePem, message] of cases) {
      const response = await t.api('POST', '/tls_certificates', {
        certificate_pem: certificatePem,
        private_key_pem: leaf.key.pem,
      });
      expect(response.status, message).toBe(400);
      expect(response.body.msg).toBe(message);
    }
  });

  it('rejects a key that is not the leaf key, encrypted, garbage or of the wrong kind, naming private_key_pem', async () => {
    const before = await countRows(t, 'tls_certificates');
    const otherRsa = ws.key('rsa');
    const encrypted = openssl(['pkey', '-aes256', '-passout', 'pass:secret'], leaf.key.pem);
    expect(encrypted).toContain('BEGIN ENCRYPTED PRIVATE KEY');
    const legacyEncrypted = openssl(
      ['rsa', '-traditional', '-aes256', '-passout', 'pass:secret'],
      leaf.key.pem,
    );
    expect(legacyEncrypted).toContain('Proc-Type: 4,ENCRYPTED');
    const keyBody = pemLines(leaf.key.pem).join('\n');
    const cases: Array<[OpensslCertificate, unknown, string | RegExp]> = [
      [leaf, otherRsa.pem, 'private_key_pem: does not match the public key of the leaf certificate'],
      // The key of the next certificate in the chain is not the leaf's either.
      [
        { ...leaf, pem: leaf.pem + intermediate.pem },
        intermediate.key.pem,
        'private_key_pem: does not match the public key of the leaf certificate',
      ],
      [
        edLeaf,
        ws.key('ed25519').pem,
        'private_key_pem: does not match the public key of the leaf certificate',
      ],
      [leaf, encrypted, 'private_key_pem: is encrypted; upload the key without a passphrase'],
      [leaf, legacyEncrypted, 'private_key_pem: is encrypted; upload the key without a passphrase'],
      [leaf, 'not a key', 'private_key_pem: is not a PEM-encoded private key'],
      [leaf, '', 'private_key_pem: is not a PEM-encoded private key'],
      [
        leaf,
        `-----BEGIN PRIVATE KEY-----\n${keyBody.slice(0, 200)}\n-----END PRIVATE KEY-----\n`,
        'private_key_pem: is not a PEM-encoded private key',
      ],
      [leaf, leaf.pem, "private_key_pem: must hold only the private key; found a 'CERTIFICATE' block"],
      [
        leaf,
        leaf.key.pem + otherRsa.pem,
        'private_key_pem: contains 2 private keys; give only the key of the leaf certificate',
      ],
      [leaf, 7, 'private_key_pem: must be a string, got number'],
    ];
    for (const [certificate, privateKeyPem, message] of cases) {
      const response = await t.api('POST', '/tls_certificates', {
        certificate_pem: certificate.pem,
        private_key_pem: privateKeyPem,
      });
      expect(response.status, String(message)).toBe(400);
      expect(response.body.error_code).toBe('ERR_EDGEWARD_100');
      expect(response.body.msg).toBe(message);
      expectNoKey(response.text, leaf.key.pem);
    }
    const missing = await t.api('POST', '/tls_certificates', { certificate_pem: leaf.pem });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toBe('private_key_pem: is required');
    expect(await countRows(t, 'tls_certificates')).toBe(before);
  });

  it('stores and returns the chain re-encoded from its certificates, without the text around them', async () => {
    const messy =
      `Subject: leaf.example.com\r\nsecret=hunter2\r\n${leaf.pem.replaceAll('\n', '\r\n')}` +
      `-----END RSA PRIVATE THING-----\nbetween the blocks\n${intermediate.pem.replace(/\n(?!-----END)/g, '\n  ')}trailing junk`;
    const created = await t.api('POST', '/tls_certificates', {
      certificate_pem: messy,
      private_key_pem: leaf.key.pem,
    });
    expect(created.status).toBe(201);
    // Exactly the two certificates as openssl writes them, nothing else.
    expect(created.body.certificate_pem).toBe(leaf.pem + intermediate.pem);
    for (const junk of ['hunter2', 'between', 'trailing', 'THING', '\r', '  ']) {
      expect(created.body.certificate_pem).not.toContain(junk);
    }
    const row = await t.server.app.edgeward.db
      .selectFrom('tls_certificates')
      .select('certificate_pem')
      .where('id', '=', String(created.body.id))
      .executeTakeFirstOrThrow();
    expect(row.certificate_pem).toBe(leaf.pem + intermediate.pem);
    expect((await t.api('GET', `/tls_certificates/${created.body.id}`)).body.certificate_pem).toBe(
      leaf.pem + intermediate.pem,
    );
  });

  it('rejects a certificate_pem that is not certificates, naming certificate_pem', async () => {
    const cases: Array<[unknown, string | RegExp]> = [
      ['garbage', 'certificate_pem: is not a PEM-encoded X.509 certificate'],
      [
        `-----BEGIN CERTIFICATE-----\n${pemLines(leaf.pem).slice(0, 6).join('\n')}\n-----END CERTIFICATE-----\n`,
        'certificate_pem: is not a PEM-encoded X.509 certificate',
      ],
      [
        `${leaf.pem}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`,
        'certificate_pem: is not a PEM-encoded X.509 certificate (block 2 of 2)',
      ],
      [leaf.pem + leaf.key.pem, /^certificate_pem: contains a private key/],
      // A key pasted without its END line, between or after certificates, or only mentioned.
      [
        leaf.pem + leaf.key.pem.replace(/-----END [A-Z ]+-----\n?$/, '') + intermediate.pem,
        /^certificate_pem: contains a private key/,
      ],
      [
        leaf.pem + leaf.key.pem.replace(/-----END [A-Z ]+-----\n?$/, ''),
        /^certificate_pem: contains a private key/,
      ],
      [`${leaf.pem}here is my RSA PRIVATE KEY, do not share\n`, /^certificate_pem: contains a private key/],
      // Any BEGIN line without its END line, even of something that is not a key.
      [
        `${leaf.pem}-----BEGIN CERTIFICATE-----\n${pemLines(intermediate.pem).join('\n')}\n`,
        'certificate_pem: has a -----BEGIN line without a matching -----END line',
      ],
      [
        `-----BEGIN NOTE-----\nsecret\n${leaf.pem}`,
        'certificate_pem: has a -----BEGIN line without a matching -----END line',
      ],
      [undefined, 'certificate_pem: is required'],
    ];
    for (const [certificatePem, message] of cases) {
      const response = await t.api('POST', '/tls_certificates', {
        certificate_pem: certificatePem,
        private_key_pem: leaf.key.pem,
      });
      expect(response.status, String(message)).toBe(400);
      if (typeof message === 'string') expect(response.body.msg).toBe(message);
      else expect(response.body.msg).toMatch(message);
      expectNoKey(response.text, leaf.key.pem);
    }
  });

  it('rejects unknown fields and over-long description or metadata', async () => {
    const base = { certificate_pem: leaf.pem, private_key_pem: leaf.key.pem };
    const unknown = await t.api('POST', '/tls_certificates', { ...base, private_key_password: 'x' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.msg).toBe('private_key_password: unknown field');
    const description = await t.api('POST', '/tls_certificates', { ...base, description: 'x'.repeat(256) });
    expect(description.status).toBe(400);
    expect(description.body.msg).toMatch(/^description: must be at most 255 bytes/);
    const metadata = await t.api('POST', '/tls_certificates', { ...base, metadata: 'ü'.repeat(2049) });
    expect(metadata.status).toBe(400);
    expect(metadata.body.msg).toMatch(/^metadata: must be at most 4096 bytes/);
    const atLimits = await t.api('POST', '/tls_certificates', {
      ...base,
      description: 'x'.repeat(255),
      metadata: 'ü'.repeat(2048),
    });
    expect(atLimits.status).toBe(201);
    const patchTooLong = await t.api('PATCH', `/tls_certificates/${atLimits.body.id}`, {
      description: 'x'.repeat(256),
    });
    expect(patchTooLong.status).toBe(400);
    expect(patchTooLong.body.msg).toMatch(/^description: /);
  });

  it('updates only description and metadata; the key never appears in list or update responses', async () => {
    const created = await t.api('POST', '/tls_certificates', {
      certificate_pem: leaf.pem + intermediate.pem,
      private_key_pem: leaf.key.pem,
    });
    const certificate = created.body;
    const patched = await t.api('PATCH', `/tls_certificates/${certificate.id}`, {
      description: 'renamed',
      metadata: 'm',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...certificate, description: 'renamed', metadata: 'm' });
    expectNoKey(patched.text, leaf.key.pem);
    for (const field of ['private_key_pem', 'certificate_pem']) {
      const refused = await t.api('PATCH', `/tls_certificates/${certificate.id}`, { [field]: leaf.key.pem });
      expect(refused.status).toBe(400);
      expect(refused.body.msg).toBe(`${field}: unknown field`);
      expectNoKey(refused.text, leaf.key.pem);
    }
    const listed = await t.api<{ tls_certificates: Record<string, unknown>[] }>('GET', '/tls_certificates');
    expect(listed.status).toBe(200);
    expect(listed.body.tls_certificates).toContainEqual(patched.body);
    for (const item of listed.body.tls_certificates) expect(Object.keys(item).sort()).toEqual(TLS_KEYS);
    expectNoKey(listed.text, leaf.key.pem);
  });

  it('keeps the private key only sealed: not in the stored data (SQLite file and WAL, or PostgreSQL rows), but recoverable with the secret key', async () => {
    const created = await t.api('POST', '/tls_certificates', {
      certificate_pem: leaf.pem,
      private_key_pem: leaf.key.pem,
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const bytes = Buffer.concat((await storedData(t)).map((stored) => stored.bytes)).toString('latin1');
    // The search does find what is stored in the clear, so its silence about the key means something.
    expect(bytes).toContain(id);
    expect(bytes).toContain(pemLines(leaf.pem)[3]);
    for (const line of keyLines(leaf.key.pem)) expect(bytes).not.toContain(line);
    expect(bytes).not.toContain('BEGIN PRIVATE KEY');

    const row = await t.server.app.edgeward.db
      .selectFrom('tls_certificates')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const opened = new SecretBox(loadSecretKey(t.dataDir, t.secretKey)).open(
      row.private_key_sealed,
      `tls_certificates:${id}:private_key_pem`,
    );
    expect(opened).toBe(openssl(['pkey'], leaf.key.pem));
    expect(JSON.parse(row.derived)).toEqual(
      Object.fromEntries(
        Object.entries(created.body).filter(
          ([key]) => !['id', 'uri', 'created_at', 'description', 'metadata', 'certificate_pem'].includes(key),
        ),
      ),
    );
  });

  it('answers 404 for unknown ids and deletes', async () => {
    const id = 'cert_0000000000000000000000000000';
    for (const [method, body] of [['GET'], ['PATCH', { description: 'x' }], ['DELETE']] as const) {
      const response = await t.api(method, `/tls_certificates/${id}`, body);
      expect(response.status, method).toBe(404);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
    }
    const created = await t.api('POST', '/tls_certificates', {
      certificate_pem: leaf.pem,
      private_key_pem: leaf.key.pem,
    });
    const deleted = await t.api('DELETE', `/tls_certificates/${created.body.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await t.api('GET', `/tls_certificates/${created.body.id}`)).status).toBe(404);
  });

  it('records created, updated and deleted events without the key', async () => {
    const created = await t.api('POST', '/tls_certificates', {
      certificate_pem: leaf.pem,
      private_key_pem: leaf.key.pem,
    });
    const id = created.body.id as string;
    await t.api('PATCH', `/tls_certificates/${id}`, { metadata: 'x' });
    await t.api('DELETE', `/tls_certificates/${id}`);
    const events = await eventsOf(t, id);
    expect(events.map((event) => event.type)).toEqual([
      'tls_certificate_created.v0',
      'tls_certificate_updated.v0',
      'tls_certificate_deleted.v0',
    ]);
    expect(JSON.parse(events[0]?.payload ?? '{}')).toEqual({ object: created.body });
    for (const event of events) expectNoKey(event.payload, leaf.key.pem);
  });

  it('creates once per Idempotency-Key and replays without the key', async () => {
    const headers = { 'idempotency-key': `cert-${Date.now()}` };
    const body = { certificate_pem: leaf.pem, private_key_pem: leaf.key.pem };
    const first = await t.api('POST', '/tls_certificates', body, { headers });
    const before = await countRows(t, 'tls_certificates');
    const again = await t.api('POST', '/tls_certificates', body, { headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expectNoKey(again.text, leaf.key.pem);
    expect(await countRows(t, 'tls_certificates')).toBe(before);
  });

  it('pages newest first through every TLS certificate', async () => {
    for (let index = 0; index < 3; index++) {
      await t.api('POST', '/tls_certificates', {
        certificate_pem: edLeaf.pem,
        private_key_pem: edLeaf.key.pem,
      });
    }
    const total = await countRows(t, 'tls_certificates');
    expect(total).toBeGreaterThan(3);
    const { seen, pages } = await walkPages<{
      tls_certificates: { id: string }[];
      next_page_uri: string | null;
    }>(t, '/tls_certificates?limit=3', 'tls_certificates', (page) => {
      expect(page.body.tls_certificates.length).toBeLessThanOrEqual(3);
      expectNoKey(page.text, edLeaf.key.pem);
    });
    expect(seen).toHaveLength(total);
    expect(new Set(seen).size).toBe(total);
    expect(seen).toEqual([...seen].sort().reverse());
    expect(pages).toBe(Math.ceil(total / 3));
  });

  it('works through the typed client', async () => {
    const client = new EdgewardClient({ baseUrl: t.baseUrl, apiKey: ADMIN_KEY });
    try {
      const certificate = await client.tlsCertificates.create(
        { certificate_pem: edLeaf.pem, private_key_pem: edLeaf.key.pem, description: 'typed' },
        { idempotencyKey: `typed-${Date.now()}` },
      );
      expect(certificate.private_key_type).toBe('ed25519');
      expect(certificate).not.toHaveProperty('private_key_pem');
      expect(await client.tlsCertificates.get(certificate.id)).toEqual(certificate);
      expect((await client.tlsCertificates.update(certificate.id, { description: 'x' })).description).toBe(
        'x',
      );
      const page = await client.tlsCertificates.list({ limit: 1 });
      expect(page.tls_certificates).toHaveLength(1);
      await client.tlsCertificates.delete(certificate.id);
      await expect(client.tlsCertificates.get(certificate.id)).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await client.close();
    }
  });
});
