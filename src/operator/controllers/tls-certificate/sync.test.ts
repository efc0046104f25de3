import { describe, expect, it } from 'vitest';
import { fakeEdgewardClient } from '../../../../test/support/fake/edgeward-client.js';
import { FakeResourceClient } from '../../../../test/support/fake/resource-client.js';
import { SECRET } from '../../runtime/resource-types.js';
import type { SecretObject } from '../shared/secret-values.js';
import { type TlsCertificateObject, tlsCertificateSync } from './sync.js';

/** Unit test of when the private key is read; the e2e test proves the upload on a real server. */

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
