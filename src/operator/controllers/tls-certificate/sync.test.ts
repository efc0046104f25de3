import { describe, expect, it } from 'vitest';
import type { EdgewardClient } from '../../../client/index.js';
import type { ResourceClient } from '../../runtime/resource-client.js';
import type { SecretObject } from '../secret-values.js';
import { type TlsCertificateObject, tlsCertificateSync } from './sync.js';

/** Unit test of when the private key is read; the e2e test proves the upload on a real server. */

const KEY_PEM = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n';

function world(secret: SecretObject | undefined) {
  const reads: string[] = [];
  const bodies: unknown[] = [];
  const secrets = {
    async get(_ns: string, name: string) {
      reads.push(name);
      if (!secret) throw Object.assign(new Error('not found'), { code: 404 });
      return secret;
    },
  } as unknown as ResourceClient<SecretObject>;
  const api = {
    tlsCertificates: {
      async create(body: unknown) {
        bodies.push(body);
        return { id: 'cert_2' };
      },
    },
  } as unknown as EdgewardClient;
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
  metadata: { name: 'web-key', resourceVersion: '3' },
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
