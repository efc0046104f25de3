import { describe, expect, it } from 'vitest';
import { FakeInformer } from '../../../../test/support/fake/informer.js';
import { FakeResourceClient } from '../../../../test/support/fake/resource-client.js';
import type { SshHostCertificate } from '../../../schemas/ssh-certificates.js';
import { SECRET } from '../../runtime/resource-types.js';
import { SSH_HOST_CERTIFICATE } from '../resource-types.js';
import type { ReferencedObject } from '../shared/ready-references.js';
import type { SecretObject } from '../shared/secret-values.js';
import { CERTIFICATE_ID_ANNOTATION, CERTIFICATE_KEY } from './certificate-secret.js';
import {
  type ResolvedCertificate,
  renewalDue,
  type SshCertificateObject,
  sshCertificateSync,
} from './certificate-sync.js';

/** Unit test of the certificate decisions; the e2e test proves them on a real cluster and server. */

const UID = 'uid-1';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a@b';
const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

function certificateObject(
  spec: Partial<SshCertificateObject['spec']> = {},
  options: { id?: string; adopt?: string } = {},
): SshCertificateObject {
  return {
    metadata: {
      name: 'web',
      namespace: 'ns',
      uid: UID,
      generation: 1,
      annotations: options.adopt ? { 'edgeward.dev/adopt-id': options.adopt } : {},
    },
    spec: { sshCertificateAuthorityId: 'sshca_1', publicKey: KEY, principals: ['a', 'b'], ...spec },
    status: options.id ? { id: options.id } : undefined,
  } as SshCertificateObject;
}

const remote: SshHostCertificate = {
  id: 'shcrt_1',
  uri: '/ssh_host_certificates/shcrt_1',
  created_at: '2030-01-01T00:00:00Z',
  description: '',
  metadata: '',
  ssh_certificate_authority_id: 'sshca_1',
  public_key: KEY.split(' ').slice(0, 2).join(' '),
  key_type: 'ed25519',
  principals: ['b', 'a'],
  valid_after: '2030-01-01T00:00:00Z',
  valid_until: '2031-01-01T00:00:00Z',
  certificate: 'ssh-ed25519-cert-v01@openssh.com AAAA',
};

function ownedSecret(certificateId: string, certificate: string): SecretObject {
  return {
    metadata: {
      name: 'web-certificate',
      namespace: 'ns',
      ownerReferences: [
        { apiVersion: 'edgeward.dev/v1alpha1', kind: 'SSHHostCertificate', name: 'web', uid: UID },
      ],
      annotations: { [CERTIFICATE_ID_ANNOTATION]: certificateId },
    },
    data: { [CERTIFICATE_KEY]: base64(certificate) },
  };
}

function harness(secret: SecretObject | undefined, authority?: ReferencedObject) {
  const writes: SecretObject[] = [];
  const secrets = new FakeResourceClient<SecretObject>(SECRET, secret ? [secret] : []);
  const recordWrite = ({ object }: { object?: SecretObject }) => {
    if (object) writes.push(object);
  };
  secrets.intercept('create', recordWrite);
  secrets.intercept('replace', recordWrite);
  const authorities = new FakeInformer<ReferencedObject>(authority ? [authority] : []);
  const sync = sshCertificateSync(
    { secrets, authorities },
    {
      kind: SSH_HOST_CERTIFICATE,
      get: async () => remote,
      create: async () => remote,
      update: async () => remote,
      delete: async () => undefined,
    },
  );
  return { sync, writes };
}

async function resolved(object: SshCertificateObject, secret: SecretObject | undefined) {
  const { sync, writes } = harness(secret);
  const resolution = await sync.resolve(object, {} as never);
  if (!resolution.ready) throw new Error(`not ready: ${resolution.reason}`);
  return { sync, writes, value: resolution.value as ResolvedCertificate };
}

describe('SSH certificate decisions', () => {
  it('refuses a foreign Secret before signing, and waits for a referenced CA to be Ready', async () => {
    const foreign: SecretObject = { metadata: { name: 'web-certificate', namespace: 'ns' }, data: {} };
    const conflict = await harness(foreign).sync.resolve(certificateObject(), {} as never);
    expect(conflict).toMatchObject({ ready: false, reason: 'SecretConflict' });

    const byRef = certificateObject({
      sshCertificateAuthorityId: undefined,
      sshCertificateAuthorityRef: { name: 'ca' },
    });
    const notReady = await harness(undefined, {
      metadata: { name: 'ca', namespace: 'ns' },
      status: { id: 'sshca_9' },
    }).sync.resolve(byRef, {} as never);
    expect(notReady).toMatchObject({ ready: false, reason: 'ReferenceNotReady' });
    const ready = await harness(undefined, {
      metadata: { name: 'ca', namespace: 'ns' },
      status: { id: 'sshca_9', conditions: [{ type: 'Ready', status: 'True' } as never] },
    }).sync.resolve(byRef, {} as never);
    expect(ready.ready && ready.value.caId).toBe('sshca_9');
  });

  it('keeps a certificate matching the spec: principals as a set, times by instant', async () => {
    const object = certificateObject(
      { validAfter: '2030-01-01T01:00:00+01:00', validUntil: '2031-01-01T00:00:00.000Z' },
      { id: 'shcrt_1' },
    );
    const { sync, value } = await resolved(object, ownedSecret('shcrt_1', remote.certificate));
    expect(sync.needsReplacement?.(object, value, remote)).toBeUndefined();
  });

  it('re-signs for new principals, validity, or a CA that is not the signer', async () => {
    const cases: [Partial<SshCertificateObject['spec']>, RegExp][] = [
      [{ principals: ['a'] }, /spec.principals differ/],
      [{ validUntil: '2032-01-01T00:00:00Z' }, /spec.validUntil differs/],
      [{ validAfter: '2030-01-01T00:00:01Z' }, /spec.validAfter differs/],
      [{ sshCertificateAuthorityId: 'sshca_2' }, /signed by sshca_1, not by sshca_2/],
    ];
    for (const [spec, reason] of cases) {
      const object = certificateObject(spec, { id: 'shcrt_1' });
      const { sync, value } = await resolved(object, undefined);
      expect(sync.needsReplacement?.(object, value, remote)).toMatch(reason);
    }
  });

  it('rewrites a missing or edited Secret from the server copy, and leaves an intact one alone', async () => {
    const object = certificateObject({}, { id: 'shcrt_1' });
    for (const secret of [
      undefined,
      ownedSecret('shcrt_1', 'edited'),
      ownedSecret('shcrt_0', remote.certificate),
    ]) {
      const { sync, value, writes } = await resolved(object, secret);
      expect(await sync.update(object, value, remote)).toMatchObject({ changed: true });
      expect(writes).toHaveLength(1);
      expect(writes[0]?.data?.[CERTIFICATE_KEY]).toBe(base64(remote.certificate));
      expect(writes[0]?.metadata?.annotations?.[CERTIFICATE_ID_ANNOTATION]).toBe('shcrt_1');
    }
    const { sync, value, writes } = await resolved(object, ownedSecret('shcrt_1', remote.certificate));
    expect(await sync.update(object, value, remote)).toMatchObject({ changed: false });
    expect(writes).toHaveLength(0);
  });

  it('adopts a matching certificate, and refuses one signed for other principals', async () => {
    const matching = certificateObject({}, { adopt: 'shcrt_1' });
    const first = await resolved(matching, undefined);
    expect(await first.sync.update(matching, first.value, remote)).toMatchObject({ changed: true });
    const other = certificateObject({ principals: ['c'] }, { adopt: 'shcrt_1' });
    const second = await resolved(other, undefined);
    await expect(second.sync.update(other, second.value, remote)).rejects.toMatchObject({
      reason: 'InvalidSpec',
    });
    expect(second.writes).toHaveLength(0);
  });

  it('renews a certificate of server-chosen validity after two thirds of it, never one the spec fixes', () => {
    const day = {
      id: 'shcrt_1',
      created_at: '2026-11-22T00:00:00Z',
      valid_after: '2026-11-22T00:00:00Z',
      valid_until: '2026-11-23T00:00:00Z',
    };
    const at = (iso: string) => Date.parse(iso);
    expect(renewalDue({}, day, at('2026-11-22T15:59:00Z'))).toBeUndefined();
    expect(renewalDue({}, day, at('2026-11-22T16:00:00Z'))).toMatch(
      /shcrt_1 expires at 2026-11-23T00:00:00Z/,
    );
    expect(renewalDue({}, day, at('2026-11-23T01:00:00Z'))).toBeDefined();
    expect(
      renewalDue({ validUntil: '2026-11-23T00:00:00Z' }, day, at('2026-11-22T23:00:00Z')),
    ).toBeUndefined();
    // A validAfter the spec set long ago: counted from the signing, so a fresh renewal is not due.
    const backdated = { ...day, valid_after: '2026-11-01T00:00:00Z' };
    expect(renewalDue({}, backdated, at('2026-11-22T01:00:00Z'))).toBeUndefined();
    expect(renewalDue({}, backdated, at('2026-11-22T16:00:00Z'))).toBeDefined();
  });
});
