import { describe, expect, it } from 'vitest';
import { CoverageWarnings, type UploadedCertificate, uncoveredHosts } from './certificate-coverage.js';

describe('the hosts of spec.tls a Secret’s certificate covers', () => {
  it('matches names and one-label wildcards, case aside', () => {
    const certificate = {
      name: 'shop-tls-1',
      secretName: 'shop-tls',
      hosts: ['shop.example.com', 'a.b.example.com', 'www.example.com'],
    };
    expect(
      uncoveredHosts(certificate, {
        subjectAlternativeNames: { dnsNames: ['Shop.example.com', '*.example.com'] },
      }),
    ).toEqual(['a.b.example.com']);
    expect(uncoveredHosts(certificate, {})).toEqual(certificate.hosts);
  });
});

describe('CertificateNotCovering', () => {
  it('is said once per Ingress and certificate serial, and again after the Ingress is forgotten', async () => {
    const said: string[] = [];
    const warnings = new CoverageWarnings({
      normal: async () => undefined,
      warning: async (_object, reason, message) => {
        said.push(`${reason}: ${message}`);
      },
    });
    const ingress = { metadata: { namespace: 'team', name: 'shop', uid: 'u1' } };
    const certificates = [
      { name: 'shop-tls-1', secretName: 'shop-tls', hosts: ['shop.example.com', 'www.example.com'] },
    ];
    let uploaded: UploadedCertificate | undefined;
    const report = () => warnings.report(ingress, certificates, () => uploaded);
    await report();
    expect(said).toEqual([]);
    uploaded = { serialNumber: '0a', subjectAlternativeNames: { dnsNames: ['shop.example.com'] } };
    await report();
    await report();
    expect(said).toEqual([
      'CertificateNotCovering: the certificate of Secret shop-tls (serial 0a) does not name www.example.com: the edge serves it another certificate',
    ]);
    uploaded = { serialNumber: '0b', subjectAlternativeNames: { dnsNames: ['shop.example.com'] } };
    await report();
    expect(said).toHaveLength(2);
    uploaded = { serialNumber: '0c', subjectAlternativeNames: { dnsNames: ['*.example.com'] } };
    await report();
    warnings.forget('team/shop');
    uploaded = { serialNumber: '0b', subjectAlternativeNames: { dnsNames: ['shop.example.com'] } };
    await report();
    expect(said).toHaveLength(3);
  });
});
