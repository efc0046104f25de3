import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeEdgewardClient } from '../../../../test/support/fake/edgeward-client.js';
import { FakeResourceClient } from '../../../../test/support/fake/resource-client.js';
import { type GeneratedCertificate, issueCertificate } from '../../../crypto/x509.js';
import type { TlsCertificate } from '../../../schemas/tls-certificates.js';
import { SECRET } from '../../runtime/resource-types.js';
import type { SecretObject } from '../shared/secret-values.js';
import { type TlsCertificateObject, tlsCertificateSync } from './sync.js';

/**
 * Unit tests of when the private key or the Secret is read and what a Secret's certificate leads
 * to; the kubernetes tests prove the uploads and replacements on a real server.
 */

const KEY_PEM = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n';

function world(secret: SecretObject | undefined) {
  const reads: string[] = [];
  const bodies: unknown[] = [];
  const secrets = new FakeResourceClient<SecretObject>(SECRET, secret ? [secret] : []);
  secrets.intercept('get', ({ name }) => {
    if (name) reads.push(name);
  });
  const api = fakeEdgewardClient(({ method, path, body }) => {
    if (method !== 'POST' || path !== '/tls_certificates') return undefined;
    bodies.push(body);
    return { status: 201, body: { id: 'cert_2' } };
  });
  return { sync: tlsCertificateSync(api, secrets), reads, bodies };
}

function certificate(
  status?: { id: string },
  annotations: Record<string, string> = {},
): TlsCertificateObject {
  return {
    metadata: { name: 'web', namespace: 'ns', uid: 'u', generation: 1, annotations },
    spec: { certificatePem: 'PEM', privateKeySecretRef: { name: 'web-key', key: 'tls.key' } },
    status,
  } as TlsCertificateObject;
}

const keySecret: SecretObject = {
  metadata: { name: 'web-key', namespace: 'ns', resourceVersion: '3' },
  data: { 'tls.key': Buffer.from(KEY_PEM).toString('base64') },
};

describe('TLSCertificate private key', () => {
  it('is read before the first create only: not once there is an id, not to adopt', async () => {
    for (const object of [
      certificate({ id: 'cert_1' }),
      certificate(undefined, { 'edgeward.dev/adopt-id': 'cert_1' }),
    ]) {
      const { sync, reads } = world(undefined);
      expect(await sync.resolve(object, {} as never)).toMatchObject({ ready: true });
      expect(reads).toEqual([]);
    }
    const { sync } = world(undefined);
    expect(await sync.resolve(certificate(), {} as never)).toMatchObject({
      ready: false,
      reason: 'SecretNotFound',
    });
  });

  it('is read to recreate a certificate deleted on the server, and its absence is reported', async () => {
    const object = certificate({ id: 'cert_1' });
    const present = world(keySecret);
    await present.sync.create(object, { privateKeyPem: undefined }, { idempotencyKey: 'k' });
    expect(present.bodies).toEqual([expect.objectContaining({ private_key_pem: KEY_PEM })]);
    const missing = world(undefined);
    await expect(
      missing.sync.create(object, { privateKeyPem: undefined }, { idempotencyKey: 'k' }),
    ).rejects.toMatchObject({
      name: 'TerminalSyncError',
      reason: 'SecretNotFound',
    });
    expect(missing.bodies).toEqual([]);
  });
});

describe('TLSCertificate from a kubernetes.io/tls Secret (secretRef)', () => {
  let ca: GeneratedCertificate;
  let first: GeneratedCertificate;
  let renewed: GeneratedCertificate;

  beforeAll(async () => {
    ca = await issueCertificate({ commonName: 'test CA', isCa: true, validDays: 2 });
    first = await issueCertificate({
      commonName: 'web',
      dnsNames: ['web.example.com'],
      validDays: 1,
      issuer: ca,
    });
    renewed = await issueCertificate({
      commonName: 'web',
      dnsNames: ['web.example.com'],
      validDays: 1,
      issuer: ca,
    });
  });

  const tlsSecret = (pair: GeneratedCertificate, extra = ''): SecretObject => ({
    metadata: { name: 'web-tls', namespace: 'ns', resourceVersion: '7' },
    type: 'kubernetes.io/tls',
    data: {
      'tls.crt': Buffer.from(`${extra}${pair.certificatePem}${ca.certificatePem}`).toString('base64'),
      'tls.key': Buffer.from(pair.privateKeyPem).toString('base64'),
      'ca.crt': Buffer.from(ca.certificatePem).toString('base64'),
    },
  });

  const fromSecret = (
    status?: { id: string },
    annotations: Record<string, string> = {},
  ): TlsCertificateObject =>
    ({
      metadata: { name: 'web', namespace: 'ns', uid: 'u', generation: 1, annotations },
      spec: { secretRef: { name: 'web-tls' }, deletionPolicy: 'Delete' },
      status,
    }) as TlsCertificateObject;

  /** What the server shows for an upload of `pair` (only the fields the sync reads matter). */
  const onServer = (id: string, pair: GeneratedCertificate): TlsCertificate =>
    ({
      id,
      uri: `https://edgeward.test/tls_certificates/${id}`,
      description: '',
      metadata: '',
      certificate_pem: `${pair.certificatePem}${ca.certificatePem}`,
      serial_number: new X509Certificate(pair.certificatePem).serialNumber.toLowerCase(),
      not_after: new Date(new X509Certificate(pair.certificatePem).validTo).toISOString(),
    }) as TlsCertificate;

  async function resolved(secret: SecretObject | undefined, object = fromSecret()) {
    const resolution = await world(secret).sync.resolve(object, {} as never);
    if (!resolution.ready) throw new Error(`not ready: ${resolution.reason}`);
    return resolution.value;
  }

  it('is read at every reconcile, waiting with SecretNotFound or InvalidSecret, and says the certificate in force stays', async () => {
    const { sync, reads } = world(tlsSecret(first));
    expect(await sync.resolve(fromSecret({ id: 'cert_1' }), {} as never)).toMatchObject({ ready: true });
    expect(reads).toEqual(['web-tls']);

    expect(await world(undefined).sync.resolve(fromSecret(), {} as never)).toEqual({
      ready: false,
      reason: 'SecretNotFound',
      message: 'spec.secretRef: Secret web-tls does not exist',
    });
    expect(await world(undefined).sync.resolve(fromSecret({ id: 'cert_1' }), {} as never)).toMatchObject({
      reason: 'SecretNotFound',
      message:
        'spec.secretRef: Secret web-tls does not exist; the server keeps serving cert_1, the certificate in force',
    });

    const half: SecretObject = {
      ...tlsSecret(first),
      data: { 'tls.crt': tlsSecret(first).data?.['tls.crt'] ?? '' },
    };
    expect(await world(half).sync.resolve(fromSecret(), {} as never)).toMatchObject({
      ready: false,
      reason: 'InvalidSecret',
      message: 'spec.secretRef: Secret web-tls has no (or an empty) tls.key',
    });
    const mismatched: SecretObject = {
      ...tlsSecret(first),
      data: { ...tlsSecret(first).data, 'tls.key': Buffer.from(renewed.privateKeyPem).toString('base64') },
    };
    const refused = await world(mismatched).sync.resolve(fromSecret(), {} as never);
    expect(refused).toMatchObject({ ready: false, reason: 'InvalidSecret' });
    expect(JSON.stringify(refused)).not.toContain('PRIVATE KEY');
  });

  it('uploads the chain re-encoded, the same body for the same Secret (a retry replays it)', async () => {
    const { sync, bodies } = world(tlsSecret(first));
    const object = fromSecret();
    await sync.create(object, await resolved(tlsSecret(first)), { idempotencyKey: 'k' });
    await sync.create(object, await resolved(tlsSecret(first, 'Bag Attributes\n')), { idempotencyKey: 'k' });
    expect(bodies).toHaveLength(2);
    expect(bodies[0]).toEqual(bodies[1]);
    expect(bodies[0]).toEqual({
      description: '',
      metadata: '',
      certificate_pem: `${new X509Certificate(first.certificatePem).toString()}${new X509Certificate(ca.certificatePem).toString()}`,
      private_key_pem: first.privateKeyPem,
    });
  });

  it('replaces the server certificate, routinely, once the Secret holds another one (a renewal)', async () => {
    const { sync } = world(undefined);
    const object = fromSecret({ id: 'cert_1' });
    expect(sync.needsReplacement?.(object, await resolved(tlsSecret(first)), onServer('cert_1', first))).toBe(
      undefined,
    );
    const renewal = sync.needsReplacement?.(
      object,
      await resolved(tlsSecret(renewed)),
      onServer('cert_1', first),
    );
    const serial = (pair: GeneratedCertificate) =>
      new X509Certificate(pair.certificatePem).serialNumber.toLowerCase();
    expect(renewal).toMatchObject({ routine: true });
    expect(typeof renewal === 'object' && renewal.because).toContain(
      `Secret web-tls holds another certificate (serial ${serial(renewed)}`,
    );
    expect(typeof renewal === 'object' && renewal.because).toContain(`the server's: serial ${serial(first)}`);
  });

  it('adopts a certificate only when it is the Secret’s, and never replaces an adopted one', async () => {
    const { sync } = world(undefined);
    const adopting = fromSecret(undefined, { 'edgeward.dev/adopt-id': 'cert_9' });
    await expect(
      sync.update(adopting, await resolved(tlsSecret(first)), onServer('cert_9', first)),
    ).resolves.toMatchObject({ changed: false });
    await expect(
      sync.update(adopting, await resolved(tlsSecret(renewed)), onServer('cert_9', first)),
    ).rejects.toMatchObject({ name: 'TerminalSyncError', reason: 'CertificateMismatch' });
  });
});
