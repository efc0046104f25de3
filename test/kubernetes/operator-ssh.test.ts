import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SshCertificateAuthority } from '../../src/schemas/ssh-certificate-authorities.js';
import type { SshHostCertificate, SshUserCertificate } from '../../src/schemas/ssh-certificates.js';
import type { SshCredential } from '../../src/schemas/ssh-credentials.js';
import { type KeyFiles, OpenSshWorkspace } from '../support/openssh.js';
import { condition, OperatorHarness, type Secret, secretValue } from '../support/operator-harness.js';
import { idPattern, type TestServer } from '../support/server.js';

/**
 * The SSH kinds end to end: an SSHCertificateAuthority whose key pair the server generates, user
 * and host certificates it signs (written to Secrets the CRs own and checked with OpenSSH's own
 * `ssh-keygen`), re-signing when signed content changes, and an SSHCredential owned by a BotUser.
 */

const h = new OperatorHarness('ssh');
const { kubectl, apply, yamlOf, getCr, getSecret, eventually, waitFor, waitGone, expectNoDrift } = h;
const { namespace } = h;
let t: TestServer;
let ssh: OpenSshWorkspace;
let userKey: KeyFiles;
let hostKey: KeyFiles;

const certificateOf = (secret: Secret) => secretValue(secret, 'certificate');

beforeAll(async () => {
  ssh = new OpenSshWorkspace();
  userKey = ssh.keygen('ed25519');
  hostKey = ssh.keygen('ecdsa', 384);
  await h.start();
  t = h.t;
});

afterAll(async () => {
  await h.stop();
  ssh?.remove();
});

/** The certificate Secret of `owner`: written by the operator, owned by the CR, nothing else in it. */
async function expectOwnedCertificateSecret(name: string, kind: string, ownerUid: string, id: string) {
  const secret = (await getSecret(name)) as Secret;
  expect(secret.type).toBe('Opaque');
  expect(Object.keys(secret.data ?? {})).toEqual(['certificate']);
  expect(secret.metadata.ownerReferences).toEqual([
    expect.objectContaining({ kind, uid: ownerUid, controller: true }),
  ]);
  expect(secret.metadata.annotations?.['edgeward.dev/certificate-id']).toBe(id);
  return certificateOf(secret);
}

describe('edgeward operator: SSH kinds', () => {
  let caPublicKey: string;
  let caId: string;
  let userCertId: string;
  let hostCertId: string;

  it('waits for the CA, which the server generates, then signs a user certificate OpenSSH accepts', async () => {
    await apply(
      yamlOf('SSHUserCertificate', 'alice', {
        description: 'alice laptop',
        sshCertificateAuthorityRef: { name: 'ca' },
        publicKey: userKey.line,
        principals: ['alice', 'admin'],
        criticalOptions: { sourceAddress: '10.0.0.0/8,127.0.0.1' },
      }),
    );
    await waitFor('sshusercertificates', 'alice', 'False', 'ReferenceNotReady');
    const none = await t.api<{ ssh_user_certificates: unknown[] }>('GET', '/ssh_user_certificates');
    expect(none.body.ssh_user_certificates).toEqual([]);

    await apply(yamlOf('SSHCertificateAuthority', 'ca', { description: 'team CA' }));
    const ca = await waitFor('sshcertificateauthorities', 'ca');
    caId = ca.status?.id as string;
    expect(caId).toMatch(idPattern('sshca'));
    const remoteCa = await t.api<SshCertificateAuthority>('GET', `/ssh_certificate_authorities/${caId}`);
    expect(remoteCa.body).toMatchObject({ id: caId, key_type: 'ed25519', description: 'team CA' });
    caPublicKey = remoteCa.body.public_key;
    expect(ca.status?.publicKey).toBe(caPublicKey);
    expect(ca.status?.keyType).toBe('ed25519');

    const cr = await waitFor('sshusercertificates', 'alice');
    userCertId = cr.status?.id as string;
    expect(userCertId).toMatch(idPattern('sucrt'));
    const remote = await t.api<SshUserCertificate>('GET', `/ssh_user_certificates/${userCertId}`);
    expect(remote.body).toMatchObject({
      ssh_certificate_authority_id: caId,
      principals: ['alice', 'admin'],
      critical_options: { 'source-address': '10.0.0.0/8,127.0.0.1' },
      extensions: { 'permit-pty': '', 'permit-user-rc': '' },
      key_type: 'ed25519',
    });
    expect(cr.status).toMatchObject({
      keyType: 'ed25519',
      validAfter: remote.body.valid_after,
      validUntil: remote.body.valid_until,
      certificateSecretName: 'alice-certificate',
    });

    const certificate = await expectOwnedCertificateSecret(
      'alice-certificate',
      'SSHUserCertificate',
      cr.metadata.uid,
      userCertId,
    );
    expect(certificate).toBe(remote.body.certificate);
    const listed = ssh.listCertificate(certificate);
    expect(listed.type).toMatch(/user certificate$/);
    expect(listed.principals).toEqual(['alice', 'admin']);
    expect(listed.signingCa.fingerprint).toBe(ssh.fingerprint(caPublicKey));
    expect(listed.publicKey).toContain(userKey.fingerprint);
    expect(listed.criticalOptions).toEqual({ 'source-address': '10.0.0.0/8,127.0.0.1' });
    expect(listed.validTo).toBe(remote.body.valid_until);
    // Signed by exactly that CA, for that principal, valid now: what sshd would check.
    expect(ssh.signAndVerifyWithCertificate(userKey, certificate, caPublicKey, 'alice').status).toBe(0);
  });

  it('signs a host certificate, and rewrites its deleted Secret from the server copy without re-signing', async () => {
    await apply(
      yamlOf('SSHHostCertificate', 'web', {
        sshCertificateAuthorityRef: { name: 'ca' },
        publicKey: hostKey.line,
        principals: ['web.example.com', '10.1.2.3'],
        validUntil: '2040-01-01T00:00:00+01:00',
        certificateSecretName: 'web-host-cert',
        deletionPolicy: 'Orphan',
      }),
    );
    const cr = await waitFor('sshhostcertificates', 'web');
    hostCertId = cr.status?.id as string;
    expect(hostCertId).toMatch(idPattern('shcrt'));
    const remote = await t.api<SshHostCertificate>('GET', `/ssh_host_certificates/${hostCertId}`);
    expect(remote.body).toMatchObject({
      ssh_certificate_authority_id: caId,
      key_type: 'ecdsa',
      valid_until: '2039-12-31T23:00:00Z',
    });
    expect(cr.status).toMatchObject({ keyType: 'ecdsa', validUntil: '2039-12-31T23:00:00Z' });
    const certificate = await expectOwnedCertificateSecret(
      'web-host-cert',
      'SSHHostCertificate',
      cr.metadata.uid,
      hostCertId,
    );
    expect(certificate).toBe(remote.body.certificate);
    const listed = ssh.listCertificate(certificate);
    expect(listed.type).toMatch(/host certificate$/);
    expect(listed.principals).toEqual(['web.example.com', '10.1.2.3']);
    expect(listed.signingCa.fingerprint).toBe(ssh.fingerprint(caPublicKey));
    expect(listed.publicKey).toContain(hostKey.fingerprint);

    // Nothing to do on a poke: no API write, no Secret write, no status write.
    await expectNoDrift('sshcertificateauthorities', 'SSHCertificateAuthority', 'ca');
    await expectNoDrift('sshusercertificates', 'SSHUserCertificate', 'alice');
    await expectNoDrift('sshhostcertificates', 'SSHHostCertificate', 'web');

    await kubectl(['delete', 'secret', '-n', namespace, 'web-host-cert']);
    const rewritten = await eventually('the rewritten host certificate Secret', () =>
      getSecret('web-host-cert'),
    );
    expect(certificateOf(rewritten)).toBe(certificate);
    expect((await getCr('sshhostcertificates', 'web'))?.status?.id).toBe(hostCertId);
    const all = await t.api<{ ssh_host_certificates: { id: string }[] }>('GET', '/ssh_host_certificates');
    expect(all.body.ssh_host_certificates.map((c) => c.id)).toEqual([hostCertId]);

    // An edited certificate is put back as well.
    await kubectl([
      'patch',
      'secret',
      '-n',
      namespace,
      'web-host-cert',
      '--type=merge',
      '-p',
      JSON.stringify({ data: { certificate: Buffer.from('tampered').toString('base64') } }),
    ]);
    await eventually('the host certificate restored', async () => {
      const secret = await getSecret('web-host-cert');
      return secret && certificateOf(secret) === certificate ? true : undefined;
    });
  });

  it('re-signs a user certificate whose principals change: new id, Secret updated, old one deleted', async () => {
    await apply(
      yamlOf('SSHUserCertificate', 'alice', {
        description: 'alice laptop',
        sshCertificateAuthorityRef: { name: 'ca' },
        publicKey: userKey.line,
        principals: ['alice', 'deploy'],
        criticalOptions: { sourceAddress: '10.0.0.0/8,127.0.0.1' },
      }),
    );
    const cr = await eventually('a re-signed user certificate', async () => {
      const now = await getCr('sshusercertificates', 'alice');
      const ready = condition(now, 'Ready');
      return now?.status?.id !== userCertId &&
        ready?.status === 'True' &&
        ready.observedGeneration === now?.metadata.generation
        ? now
        : undefined;
    });
    expect(condition(cr, 'Ready')?.reason).toBe('Replaced');
    const newId = cr.status?.id as string;
    expect(newId).toMatch(idPattern('sucrt'));
    expect((await t.api('GET', `/ssh_user_certificates/${userCertId}`)).status).toBe(404);
    const remote = await t.api<SshUserCertificate>('GET', `/ssh_user_certificates/${newId}`);
    expect(remote.body.principals).toEqual(['alice', 'deploy']);
    const certificate = await expectOwnedCertificateSecret(
      'alice-certificate',
      'SSHUserCertificate',
      cr.metadata.uid,
      newId,
    );
    expect(certificate).toBe(remote.body.certificate);
    expect(ssh.listCertificate(certificate).principals).toEqual(['alice', 'deploy']);
    expect(ssh.signAndVerifyWithCertificate(userKey, certificate, caPublicKey, 'deploy').status).toBe(0);
    userCertId = newId;

    // A description change is a PATCH of the same certificate.
    await apply(
      yamlOf('SSHUserCertificate', 'alice', {
        description: 'alice desktop',
        sshCertificateAuthorityRef: { name: 'ca' },
        publicKey: userKey.line,
        principals: ['alice', 'deploy'],
        criticalOptions: { sourceAddress: '10.0.0.0/8,127.0.0.1' },
      }),
    );
    await eventually('the description on the server', async () => {
      const now = await t.api<SshUserCertificate>('GET', `/ssh_user_certificates/${userCertId}`);
      return now.body.description === 'alice desktop' ? true : undefined;
    });
    expect((await getCr('sshusercertificates', 'alice'))?.status?.id).toBe(userCertId);
  });

  it('creates an SSHCredential once its BotUser owner is Ready', async () => {
    const agentKey = ssh.keygen('ed25519');
    await apply(
      yamlOf('SSHCredential', 'agent', {
        description: 'edge agent',
        acl: ['bind:*.example.com'],
        publicKey: agentKey.line,
        ownerRef: { name: 'ssh-bot' },
      }),
    );
    await waitFor('sshcredentials', 'agent', 'False', 'ReferenceNotReady');
    const none = await t.api<{ ssh_credentials: unknown[] }>('GET', '/ssh_credentials');
    expect(none.body.ssh_credentials).toEqual([]);

    await apply(yamlOf('BotUser', 'ssh-bot', {}));
    const bot = await waitFor('botusers', 'ssh-bot');
    const cr = await waitFor('sshcredentials', 'agent');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('sshcr'));
    expect(cr.status?.ownerId).toBe(bot.status?.id);
    const remote = await t.api<SshCredential>('GET', `/ssh_credentials/${id}`);
    expect(remote.body).toMatchObject({
      owner_id: bot.status?.id,
      acl: ['bind:*.example.com'],
      description: 'edge agent',
    });
    expect(ssh.fingerprint(remote.body.public_key)).toBe(agentKey.fingerprint);
    await expectNoDrift('sshcredentials', 'SSHCredential', 'agent');

    await apply(
      yamlOf('SSHCredential', 'agent', {
        description: 'edge agent',
        acl: ['*'],
        publicKey: agentKey.line,
        ownerRef: { name: 'ssh-bot' },
      }),
    );
    await eventually('the acl on the server', async () => {
      const now = await t.api<SshCredential>('GET', `/ssh_credentials/${id}`);
      return JSON.stringify(now.body.acl) === '["*"]' ? true : undefined;
    });

    await h.delete('sshcredentials', 'agent');
    await waitGone('sshcredentials', 'agent');
    expect((await t.api('GET', `/ssh_credentials/${id}`)).status).toBe(404);
  });

  it('adopts a CA only with the key type it has: InvalidSpec for another one', async () => {
    const created = await t.api<SshCertificateAuthority>('POST', '/ssh_certificate_authorities', {
      description: 'made by hand',
      private_key_type: 'ecdsa',
      elliptic_curve: 'p384',
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const adopt = { 'edgeward.dev/adopt-id': id };
    // keyType defaults to ed25519: not the key pair the server holds.
    await apply(yamlOf('SSHCertificateAuthority', 'wrong-type', {}, adopt));
    const refused = await waitFor('sshcertificateauthorities', 'wrong-type', 'False', 'InvalidSpec');
    expect(condition(refused, 'Ready')?.message).toMatch(
      /spec.keyType: .* has a ecdsa key pair, not ed25519/,
    );
    expect(refused.status?.id).toBeUndefined();

    await apply(
      yamlOf(
        'SSHCertificateAuthority',
        'adopted',
        { description: 'made by hand', keyType: 'ecdsa', ellipticCurve: 'p384' },
        adopt,
      ),
    );
    const cr = await waitFor('sshcertificateauthorities', 'adopted');
    expect(cr.status?.id).toBe(id);
    expect(cr.status?.publicKey).toBe(created.body.public_key);
    await expectNoDrift('sshcertificateauthorities', 'SSHCertificateAuthority', 'adopted');

    // The refused CR never recorded the id, so deleting it leaves the CA alone.
    await h.delete('sshcertificateauthorities', 'wrong-type');
    await waitGone('sshcertificateauthorities', 'wrong-type');
    expect((await t.api('GET', `/ssh_certificate_authorities/${id}`)).status).toBe(200);
  });

  it('deletes certificates and the CA with their CRs, and an Orphan certificate stays', async () => {
    await h.delete('sshusercertificates', 'alice');
    await h.delete('sshhostcertificates', 'web');
    await waitGone('sshusercertificates', 'alice');
    await waitGone('sshhostcertificates', 'web');
    expect((await t.api('GET', `/ssh_user_certificates/${userCertId}`)).status).toBe(404);
    expect((await t.api('GET', `/ssh_host_certificates/${hostCertId}`)).status).toBe(200);
    // Orphaned with its certificate: the Secret workloads mount is released, not left to GC.
    const released = await h.getSecret('web-host-cert');
    expect(released?.metadata.ownerReferences ?? []).toEqual([]);
    expect(released?.metadata.labels?.['app.kubernetes.io/managed-by']).toBeUndefined();
    expect(released?.data?.certificate).toBeDefined();

    await h.delete('sshcertificateauthorities', 'ca');
    await waitGone('sshcertificateauthorities', 'ca');
    expect((await t.api('GET', `/ssh_certificate_authorities/${caId}`)).status).toBe(404);
  });
});
