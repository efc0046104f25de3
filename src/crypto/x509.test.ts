import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from './invalid-input.js';
import {
  canonicalIp,
  certificateAuthorityFields,
  checkChainOrder,
  leafCertificateFields,
  normalizedPem,
  parseCaCertificate,
  parsePemChain,
  parsePrivateKey,
  pemBlocks,
  privateKeyMatches,
  privateKeyType,
  selfSignedCertificate,
} from './x509.js';

/** The message of the InvalidInputError `run` throws (fails the test when it does not throw one). */
function refusalOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as InvalidInputError).message;
  }
  throw new Error('expected an InvalidInputError');
}

describe('selfSignedCertificate', () => {
  it.each(['rsa', 'ecdsa'] as const)(
    'generates a %s key and a self-signed certificate for it',
    async (keyType) => {
      const notBefore = new Date('2030-01-02T03:04:05.678Z');
      const generated = await selfSignedCertificate({
        commonName: 'sp.example.com',
        validDays: 10,
        notBefore,
        keyType,
        dnsNames: ['sp.example.com'],
        ips: ['2001:db8::7'],
      });
      expect(generated.certificatePem).toMatch(
        /^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n$/,
      );
      expect(generated.privateKeyPem).toMatch(
        /^-----BEGIN PRIVATE KEY-----\n[\s\S]+-----END PRIVATE KEY-----\n$/,
      );

      // Read back by OpenSSL, independently of the library that wrote it.
      const native = new X509Certificate(generated.certificatePem);
      expect(native.subject).toBe('CN=sp.example.com');
      expect(native.issuer).toBe('CN=sp.example.com');
      expect(native.verify(native.publicKey)).toBe(true);
      expect(native.ca).toBe(false);
      expect(new Date(native.validFrom).toISOString()).toBe('2030-01-02T03:04:05.000Z');
      expect(new Date(native.validTo).toISOString()).toBe('2030-01-12T03:04:05.000Z');
      expect(native.subjectAltName).toBe('DNS:sp.example.com, IP Address:2001:DB8:0:0:0:0:0:7');

      const key = parsePrivateKey(generated.privateKeyPem, 'key');
      expect(privateKeyType(key, 'key')).toBe(keyType);
      if (keyType === 'rsa') expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048);
      else expect(key.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
      const [parsed] = parsePemChain(generated.certificatePem, 'cert');
      if (!parsed) throw new Error('no certificate parsed');
      expect(privateKeyMatches(parsed, key)).toBe(true);

      const fields = leafCertificateFields(parsed, keyType, null);
      expect(fields).toMatchObject({
        subject_common_name: 'sp.example.com',
        issuer_common_name: 'sp.example.com',
        subject_alternative_names: { dns_names: ['sp.example.com'], ips: ['2001:db8::7'] },
        not_before: '2030-01-02T03:04:05Z',
        not_after: '2030-01-12T03:04:05Z',
        key_usages: keyType === 'rsa' ? ['digital_signature', 'key_encipherment'] : ['digital_signature'],
        extended_key_usages: ['server_auth', 'client_auth'],
        private_key_type: keyType,
      });
      expect(fields.serial_number).toBe(native.serialNumber.toLowerCase());
      expect(Array.isArray(fields.extended_key_usages) && fields.extended_key_usages.constructor).toBe(Array);

      const text = execFileSync('openssl', ['x509', '-noout', '-text'], {
        input: generated.certificatePem,
        encoding: 'utf8',
      });
      expect(text).toContain('CA:FALSE');
    },
  );

  it('makes a different key every time', async () => {
    const first = await selfSignedCertificate({ commonName: 'a', validDays: 1 });
    const second = await selfSignedCertificate({ commonName: 'a', validDays: 1 });
    expect(first.privateKeyPem).not.toBe(second.privateKeyPem);
    const [certificate] = parsePemChain(first.certificatePem, 'c');
    if (!certificate) throw new Error('no certificate parsed');
    expect(privateKeyMatches(certificate, parsePrivateKey(second.privateKeyPem, 'k'))).toBe(false);
    await expect(selfSignedCertificate({ commonName: 'a', validDays: 0 })).rejects.toThrow(/validDays/);
  });
});

describe('parsing', () => {
  it('splits PEM blocks and flags mismatched END labels', () => {
    const blocks = pemBlocks(
      'text\n-----BEGIN A-----\nQUJD\n-----END A-----\n-----BEGIN B-----\n-----END C-----',
    );
    expect(blocks.map((block) => block.label)).toEqual(['A', '']);
    expect(blocks[0]?.body.trim()).toBe('QUJD');
  });

  it('re-encodes certificates without the text around them', async () => {
    const a = await selfSignedCertificate({ commonName: 'a', validDays: 1 });
    const b = await selfSignedCertificate({ commonName: 'b', validDays: 1 });
    const chain = parsePemChain(
      `intro\n${a.certificatePem}middle\n${b.certificatePem.replaceAll('\n', '\r\n')}end`,
      'f',
    );
    expect(normalizedPem(chain)).toBe(a.certificatePem + b.certificatePem);
  });

  it('names the field in every refusal', async () => {
    const { certificatePem, privateKeyPem } = await selfSignedCertificate({ commonName: 'x', validDays: 1 });
    expect(refusalOf(() => parsePemChain('nope', 'f'))).toBe('f: is not a PEM-encoded X.509 certificate');
    expect(refusalOf(() => parsePemChain(certificatePem + privateKeyPem, 'f'))).toMatch(
      /^f: contains a private key/,
    );
    expect(
      refusalOf(() =>
        parsePemChain(`${certificatePem}-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----`, 'f'),
      ),
    ).toBe('f: is not a PEM-encoded X.509 certificate (block 2 of 2)');
    expect(
      refusalOf(() => parsePemChain(`${certificatePem}${privateKeyPem.split('-----END')[0]}`, 'f')),
    ).toMatch(/^f: contains a private key/);
    expect(refusalOf(() => parsePemChain(`-----BEGIN X-----\n${certificatePem}`, 'f'))).toBe(
      'f: has a -----BEGIN line without a matching -----END line',
    );
    expect(refusalOf(() => parseCaCertificate(certificatePem, 'ca'))).toBe(
      'ca: is not a CA certificate (basicConstraints CA is not true)',
    );
    expect(refusalOf(() => parseCaCertificate(certificatePem + certificatePem, 'ca'))).toBe(
      'ca: contains 2 certificates; upload one CA certificate per certificate authority',
    );
    expect(refusalOf(() => parsePrivateKey('nope', 'k'))).toBe('k: is not a PEM-encoded private key');
    expect(refusalOf(() => parsePrivateKey(certificatePem, 'k'))).toBe(
      "k: must hold only the private key; found a 'CERTIFICATE' block",
    );
  });

  it('recognises encrypted keys and unsupported key types', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const encrypted = privateKey.export({
      type: 'pkcs8',
      format: 'pem',
      cipher: 'aes-256-cbc',
      passphrase: 'pw',
    });
    expect(refusalOf(() => parsePrivateKey(encrypted.toString(), 'k'))).toBe(
      'k: is encrypted; upload the key without a passphrase',
    );
    const ed448 = generateKeyPairSync('ed448').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(refusalOf(() => privateKeyType(parsePrivateKey(ed448, 'k'), 'k'))).toBe(
      "k: has key type 'ed448'; use an RSA, ECDSA or Ed25519 key",
    );
    const ed25519 = generateKeyPairSync('ed25519')
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    expect(privateKeyType(parsePrivateKey(ed25519, 'k'), 'k')).toBe('ed25519');
  });

  it('refuses a chain whose second certificate did not issue the first', async () => {
    const a = await selfSignedCertificate({ commonName: 'same', validDays: 1 });
    const b = await selfSignedCertificate({ commonName: 'same', validDays: 1 });
    // Same names, different keys: the name check alone would pass; the signature check does not.
    const chain = parsePemChain(a.certificatePem + b.certificatePem, 'chain');
    expect(refusalOf(() => checkChainOrder(chain, 'chain'))).toBe(
      'chain: certificate 2 is not the issuer of certificate 1; give the chain leaf first',
    );
    expect(() => checkChainOrder(parsePemChain(a.certificatePem, 'chain'), 'chain')).not.toThrow();
  });

  it('derives CA fields', () => {
    const pem = execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        '/dev/null',
        '-subj',
        '/O=Org/CN=First CN/CN=Second CN',
        '-days',
        '2',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,decipherOnly,keyAgreement',
        '-addext',
        'extendedKeyUsage=OCSPSigning,timeStamping,2.5.29.37.0,1.2.3.4',
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const fields = certificateAuthorityFields(parseCaCertificate(pem, 'ca_pem'));
    expect(fields.subject_common_name).toBe('Second CN');
    expect(fields.key_usages).toEqual(['key_agreement', 'cert_sign', 'decipher_only']);
    expect(fields.extended_key_usages).toEqual(['ocsp_signing', 'time_stamping', 'any', '1.2.3.4']);
    expect(fields.not_before).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  });

  it('writes IP addresses canonically', () => {
    expect(canonicalIp('192.0.2.1')).toBe('192.0.2.1');
    expect(canonicalIp('2001:DB8:0:0:0:0:0:1')).toBe('2001:db8::1');
    expect(canonicalIp('2001:db8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1');
  });
});
