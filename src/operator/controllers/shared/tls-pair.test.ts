import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type GeneratedCertificate, issueCertificate } from '../../../crypto/x509.js';
import { InvalidTlsPairError, readTlsPair, sameChain } from './tls-pair.js';

/** The checks a Secret's certificate and key pass before an upload, on real certificates. */

const NAMES = { certificate: 'Secret web key tls.crt', privateKey: 'Secret web key tls.key' };
let ca: GeneratedCertificate;
let leaf: GeneratedCertificate;
let other: GeneratedCertificate;

beforeAll(async () => {
  ca = await issueCertificate({ commonName: 'test CA', isCa: true, validDays: 2 });
  leaf = await issueCertificate({
    commonName: 'web',
    dnsNames: ['web.example.com'],
    validDays: 1,
    issuer: ca,
  });
  other = await issueCertificate({ commonName: 'other', validDays: 1, issuer: ca });
});

const refusal = (certificatePem: string, privateKeyPem: string) => {
  try {
    readTlsPair(certificatePem, privateKeyPem, NAMES);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidTlsPairError);
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('a certificate chain and key from a Secret', () => {
  it('is re-encoded leaf first, with the leaf serial and notAfter, whatever text is around it', () => {
    const text = `subject=web\n${leaf.certificatePem}\r\nissuer=ca\n${ca.certificatePem}`;
    const pair = readTlsPair(text, leaf.privateKeyPem, NAMES);
    const native = new X509Certificate(leaf.certificatePem);
    expect(pair.chainPem).toBe(`${native.toString()}${new X509Certificate(ca.certificatePem).toString()}`);
    expect(pair.chainPem).not.toContain('subject=');
    expect(pair.serialNumber).toBe(native.serialNumber.toLowerCase());
    expect(Date.parse(pair.notAfter)).toBe(Date.parse(native.validTo));
    expect(sameChain(pair.chainPem, text)).toBe(true);
    expect(sameChain(pair.chainPem, leaf.certificatePem)).toBe(false);
    expect(sameChain(pair.chainPem, `${other.certificatePem}${ca.certificatePem}`)).toBe(false);
  });

  it('is refused when it is no chain leaf first, or the key is not the leaf’s, naming the Secret key, never the key', () => {
    expect(refusal('', leaf.privateKeyPem)).toBe('Secret web key tls.crt holds no PEM certificate');
    expect(refusal(`${ca.certificatePem}${leaf.certificatePem}`, leaf.privateKeyPem)).toContain(
      'certificate 1 is not issued and signed by certificate 2',
    );
    expect(refusal(leaf.certificatePem, 'not a key')).toBe(
      'Secret web key tls.key is not an unencrypted PEM private key',
    );
    const wrongKey = refusal(leaf.certificatePem, other.privateKeyPem);
    expect(wrongKey).toBe(
      'Secret web key tls.key is not the key of the certificate in Secret web key tls.crt',
    );
    expect(wrongKey).not.toContain('PRIVATE KEY');
    const broken = leaf.certificatePem.replace(/\n[A-Za-z0-9+/]{20}/, '\n!!!!');
    expect(refusal(broken, leaf.privateKeyPem)).toBe('Secret web key tls.crt: certificate 1 does not parse');
  });
});
