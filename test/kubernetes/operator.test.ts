import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/crypto/tokens.js';
import { OpensslWorkspace } from '../support/openssl.js';
import {
  type Cr,
  condition,
  OperatorHarness,
  type Secret,
  secretValue,
} from '../support/operator-harness.js';
import { idPattern, type TestServer } from '../support/server.js';

/**
 * The operator end to end: the CRDs on a real kube-apiserver, a real edgeward server, and the
 * operator as a separate process (`edgeward operator`), driven only by `kubectl apply`/`delete` and
 * checked against the server's raw API and database. Includes a SIGKILL in the middle of 50
 * credential creates: after a restart there must be no duplicate and no lost token.
 */

const h = new OperatorHarness('operator');
const { kubectl, apply, yamlOf, getCr, getSecret, eventually, waitFor, waitGone, expectNoDrift } = h;
const { namespace, suffix } = h;
let t: TestServer;

const tokenOf = (secret: Secret) => secretValue(secret, 'token');

function credentialRows(descriptionPrefix: string) {
  return t.server.app.edgeward.db
    .selectFrom('credentials')
    .select(['id', 'description', 'token_hash', 'owner_id'])
    .where('description', 'like', `${descriptionPrefix}%`)
    .execute();
}

beforeAll(async () => {
  await h.start();
  t = h.t;
});

afterAll(() => h.stop());

describe('edgeward operator', () => {
  it('creates a BotUser on the server, follows spec changes, and deletes it with the CR', async () => {
    await apply(yamlOf('BotUser', 'ci-bot', {}));
    const cr = await waitFor('botusers', 'ci-bot');
    expect(cr.status?.id).toMatch(idPattern('bot'));
    expect(cr.metadata.finalizers).toContain('edgeward.dev/finalizer');
    expect(condition(cr, 'Ready')).toMatchObject({ status: 'True', reason: 'Created' });
    expect(condition(cr, 'Synced')?.status).toBe('True');
    const id = cr.status?.id as string;
    const remote = await t.api('GET', `/bot_users/${id}`);
    expect(remote.status).toBe(200);
    expect(remote.body).toMatchObject({ id, name: 'ci-bot', active: true });
    expect(cr.status?.uri).toBe(remote.body.uri);

    await apply(yamlOf('BotUser', 'ci-bot', { name: 'CI robot', active: false }));
    const updated = await waitFor('botusers', 'ci-bot');
    expect(updated.status?.id).toBe(id);
    // As after the create: a follow-up reconcile may already say UpToDate.
    expect(condition(updated, 'Ready')?.reason).toBe('Updated');
    expect((await t.api('GET', `/bot_users/${id}`)).body).toMatchObject({ name: 'CI robot', active: false });

    await kubectl(['delete', '-n', namespace, 'botusers.edgeward.dev', 'ci-bot', '--wait=false']);
    await waitGone('botusers', 'ci-bot');
    expect((await t.api('GET', `/bot_users/${id}`)).status).toBe(404);
  });

  it('recreates a BotUser deleted on the server, on the next reconcile', async () => {
    await apply(yamlOf('BotUser', 'drift-bot', {}));
    const first = (await waitFor('botusers', 'drift-bot')).status?.id as string;
    expect((await t.api('DELETE', `/bot_users/${first}`)).status).toBe(204);
    // A metadata change (label) enqueues the object without waiting for the periodic resync.
    await kubectl(['label', '-n', namespace, 'botusers.edgeward.dev', 'drift-bot', 'poke=1']);
    const recreated = await eventually('a new bot id', async () => {
      const cr = await getCr('botusers', 'drift-bot');
      return cr?.status?.id && cr.status.id !== first && condition(cr, 'Ready')?.status === 'True'
        ? cr
        : undefined;
    });
    expect((await t.api('GET', `/bot_users/${recreated.status?.id}`)).status).toBe(200);
  });

  it('reserves an address (status.addr), updates its description, and orphans it on delete', async () => {
    await apply(
      yamlOf('ReservedAddress', 'db-addr', {
        description: 'database',
        region: 'eu',
        deletionPolicy: 'Orphan',
      }),
    );
    const cr = await waitFor('reservedaddresses', 'db-addr');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('ra'));
    const remote = await t.api('GET', `/reserved_addrs/${id}`);
    expect(remote.body).toMatchObject({ id, description: 'database', region: 'eu' });
    expect(cr.status?.addr).toBe(remote.body.addr);
    expect(cr.status?.region).toBe('eu');

    await apply(
      yamlOf('ReservedAddress', 'db-addr', {
        description: 'primary db',
        region: 'eu',
        deletionPolicy: 'Orphan',
      }),
    );
    await waitFor('reservedaddresses', 'db-addr');
    expect((await t.api('GET', `/reserved_addrs/${id}`)).body).toMatchObject({ description: 'primary db' });

    await kubectl(['delete', '-n', namespace, 'reservedaddresses.edgeward.dev', 'db-addr', '--wait=false']);
    await waitGone('reservedaddresses', 'db-addr');
    expect((await t.api('GET', `/reserved_addrs/${id}`)).status).toBe(200);
  });

  it('restored from a backup (a new uid, no status), a CR finds its resource again through edgeward.dev/external-id', async () => {
    const hostport = `restored-${suffix}.example.com:443`;
    const edgesOnHostport = async () => {
      const { body } = await t.api<{ tls_edges: Array<{ id: string; hostports: string[] }> }>(
        'GET',
        '/edges/tls?limit=100',
      );
      return body.tls_edges.filter((edge) => edge.hostports.includes(hostport));
    };
    await apply(yamlOf('TLSEdge', 'restored', { hostports: [hostport], deletionPolicy: 'Orphan' }));
    const first = await waitFor('tlsedges', 'restored');
    const id = first.status?.id as string;
    expect(id).toMatch(idPattern('edgtls'));
    const mirrored = await eventually('the id mirrored into the external-id annotation', async () => {
      const cr = await getCr('tlsedges', 'restored');
      return cr?.metadata.annotations?.['edgeward.dev/external-id'] === id ? cr : undefined;
    });
    // The backup: the object as `kubectl get -o json` shows it, without what a restore drops.
    const { status: _status, ...backup } = mirrored;
    const {
      uid: _uid,
      resourceVersion: _rv,
      creationTimestamp: _ct,
      managedFields: _mf,
      finalizers: _f,
      ...metadata
    } = backup.metadata as Record<string, unknown>;
    await kubectl(['delete', '-n', namespace, 'tlsedges.edgeward.dev', 'restored', '--wait=false']);
    await waitGone('tlsedges', 'restored');
    expect(await edgesOnHostport()).toHaveLength(1);

    await apply(JSON.stringify({ ...backup, metadata }));
    const restored = await waitFor('tlsedges', 'restored');
    expect(restored.metadata.uid).not.toBe(mirrored.metadata.uid);
    expect(restored.status?.id).toBe(id);
    expect(condition(restored, 'Ready')?.reason).toBe('Recovered');
    expect(await edgesOnHostport()).toEqual([expect.objectContaining({ id })]);

    await apply(yamlOf('TLSEdge', 'restored', { hostports: [hostport] }, { 'edgeward.dev/external-id': id }));
    await kubectl(['delete', '-n', namespace, 'tlsedges.edgeward.dev', 'restored', '--wait=false']);
    await waitGone('tlsedges', 'restored');
    expect(await edgesOnHostport()).toEqual([]);
  });

  it('adopts an existing server resource by annotation, and leaves a paused object alone', async () => {
    const existing = await t.api('POST', '/reserved_addrs', { description: 'made by hand', region: 'us' });
    expect(existing.status).toBe(201);
    const id = existing.body.id as string;
    await apply(
      yamlOf('ReservedAddress', 'adopted', { description: 'now managed' }, { 'edgeward.dev/adopt-id': id }),
    );
    const cr = await waitFor('reservedaddresses', 'adopted');
    expect(cr.status?.id).toBe(id);
    expect((await t.api('GET', `/reserved_addrs/${id}`)).body).toMatchObject({ description: 'now managed' });

    await apply(
      yamlOf(
        'ReservedAddress',
        'adopted',
        { description: 'paused change' },
        { 'edgeward.dev/adopt-id': id, 'edgeward.dev/paused': 'true' },
      ),
    );
    await eventually('Synced=False Paused', async () => {
      const paused = await getCr('reservedaddresses', 'adopted');
      return condition(paused, 'Synced')?.reason === 'Paused' ? paused : undefined;
    });
    expect((await t.api('GET', `/reserved_addrs/${id}`)).body).toMatchObject({ description: 'now managed' });
  });

  it('reconciles an IPPolicy and its inline rules by cidr, keeping unchanged rules', async () => {
    const policy = (rules: unknown[]) => yamlOf('IPPolicy', 'office', { description: 'office', rules });
    await apply(
      policy([
        { cidr: '10.0.0.0/8', action: 'allow', description: 'lan' },
        { cidr: '192.0.2.0/24', action: 'deny' },
      ]),
    );
    const cr = await waitFor('ippolicies', 'office');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('ipp'));
    const serverRules = async () => {
      const all = (await t.api('GET', '/ip_policy_rules?limit=100')).body.ip_policy_rules as {
        id: string;
        cidr: string;
        action: string;
        description: string;
        ip_policy: { id: string };
      }[];
      return all
        .filter((rule) => rule.ip_policy.id === id)
        .map(({ id: ruleId, cidr, action, description }) => ({ id: ruleId, cidr, action, description }))
        .sort((a, b) => a.cidr.localeCompare(b.cidr));
    };
    const first = await serverRules();
    expect(first.map(({ cidr, action, description }) => ({ cidr, action, description }))).toEqual([
      { cidr: '10.0.0.0/8', action: 'allow', description: 'lan' },
      { cidr: '192.0.2.0/24', action: 'deny', description: '' },
    ]);
    expect(cr.status?.rules).toEqual([
      { id: first[0]?.id, cidr: '10.0.0.0/8', action: 'allow' },
      { id: first[1]?.id, cidr: '192.0.2.0/24', action: 'deny' },
    ]);

    await apply(
      policy([
        { cidr: '10.0.0.0/8', action: 'deny', description: 'lan' },
        { cidr: '203.0.113.0/24', action: 'allow' },
      ]),
    );
    const updated = await waitFor('ippolicies', 'office');
    const second = await serverRules();
    expect(second.map(({ cidr, action }) => `${cidr} ${action}`)).toEqual([
      '10.0.0.0/8 deny',
      '203.0.113.0/24 allow',
    ]);
    expect(second[0]?.id).toBe(first[0]?.id);
    await expectNoDrift('ippolicies', 'IPPolicy', 'office');
    expect(updated.status?.rules?.map((rule: { id: string }) => rule.id)).toEqual([
      second[0]?.id,
      second[1]?.id,
    ]);

    await kubectl(['delete', '-n', namespace, 'ippolicies.edgeward.dev', 'office', '--wait=false']);
    await waitGone('ippolicies', 'office');
    expect((await t.api('GET', `/ip_policies/${id}`)).status).toBe(404);
  });

  it('waits for a referenced IPPolicy, then configures a TLSEdge with a backend it keeps', async () => {
    const edge = (spec: Record<string, unknown>) =>
      yamlOf('TLSEdge', 'web', {
        description: 'web',
        hostports: ['app.example.com:443'],
        tlsTermination: { terminateAt: 'upstream' },
        ...spec,
      });
    await apply(
      edge({
        backend: { labels: { app: 'web' } },
        ipRestriction: { ipPolicyRefs: [{ name: 'edge-policy' }] },
      }),
    );
    await waitFor('tlsedges', 'web', 'False', 'ReferenceNotReady');

    await apply(yamlOf('IPPolicy', 'edge-policy', { rules: [{ cidr: '10.0.0.0/8', action: 'allow' }] }));
    const policy = await waitFor('ippolicies', 'edge-policy');
    const cr = await waitFor('tlsedges', 'web');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('edgtls'));
    const backendId = cr.status?.backendId as string;
    expect(backendId).toMatch(idPattern('bkdtg'));
    expect(cr.status?.hostports).toEqual(['app.example.com:443']);
    const remote = (await t.api('GET', `/edges/tls/${id}`)).body as Record<string, unknown> & {
      backend: { backend: { id: string } };
      ip_restriction: { ip_policies: { id: string }[] };
      tls_termination: { terminate_at: string };
    };
    expect(remote.hostports).toEqual(['app.example.com:443']);
    expect(remote.backend.backend.id).toBe(backendId);
    expect(remote.ip_restriction.ip_policies.map((p) => p.id)).toEqual([policy.status?.id]);
    expect(remote.tls_termination.terminate_at).toBe('upstream');
    expect((await t.api('GET', `/backends/tunnel_group/${backendId}`)).body).toMatchObject({
      labels: { app: 'web' },
    });
    await expectNoDrift('tlsedges', 'TLSEdge', 'web');

    // New labels relabel the same backend; dropping ipRestriction deletes the module.
    await apply(edge({ backend: { labels: { app: 'web', tier: 'front' } } }));
    const updated = await waitFor('tlsedges', 'web');
    expect(updated.status?.backendId).toBe(backendId);
    expect((await t.api('GET', `/backends/tunnel_group/${backendId}`)).body).toMatchObject({
      labels: { app: 'web', tier: 'front' },
    });
    expect((await t.api('GET', `/edges/tls/${id}`)).body).toMatchObject({ ip_restriction: null });

    await kubectl(['delete', '-n', namespace, 'tlsedges.edgeward.dev', 'web', '--wait=false']);
    await waitGone('tlsedges', 'web');
    expect((await t.api('GET', `/edges/tls/${id}`)).status).toBe(404);
    expect((await t.api('GET', `/backends/tunnel_group/${backendId}`)).status).toBe(404);
  });

  it('uploads a CertificateAuthority, lets a TLSEdge verify clients with it, and holds its delete while in use', async () => {
    const workspace = new OpensslWorkspace();
    try {
      const key = workspace.key('ec');
      const ca = workspace.certificate({
        subject: `/CN=Client CA ${suffix}`,
        key,
        extensions: ['basicConstraints = critical,CA:TRUE', 'keyUsage = critical,keyCertSign,cRLSign'],
      });
      const clientsEdge = yamlOf('TLSEdge', 'clients', {
        hostports: [`clients-${suffix}.example.com:443`],
        mutualTls: { certificateAuthorityRefs: [{ name: 'client-ca' }] },
      });
      await apply(clientsEdge);
      await waitFor('tlsedges', 'clients', 'False', 'ReferenceNotReady');

      await apply(yamlOf('CertificateAuthority', 'client-ca', { description: 'clients', caPem: ca.pem }));
      const caCr = await waitFor('certificateauthorities', 'client-ca');
      const caId = caCr.status?.id as string;
      expect(caId).toMatch(idPattern('ca'));
      expect(caCr.status?.subjectCommonName).toBe(`Client CA ${suffix}`);
      expect(caCr.status?.keyUsages).toEqual(['cert_sign', 'crl_sign']);
      const remoteCa = await t.api('GET', `/certificate_authorities/${caId}`);
      expect(remoteCa.body).toMatchObject({ description: 'clients', not_after: caCr.status?.notAfter });

      const edge = await waitFor('tlsedges', 'clients');
      const remoteEdge = (await t.api('GET', `/edges/tls/${edge.status?.id}`)).body as {
        mutual_tls: { certificate_authorities: { id: string }[] };
      };
      expect(remoteEdge.mutual_tls.certificate_authorities.map((c) => c.id)).toEqual([caId]);
      await expectNoDrift('certificateauthorities', 'CertificateAuthority', 'client-ca');

      // The server refuses to delete a CA an edge still uses: the CR waits, saying why.
      await kubectl([
        'delete',
        '-n',
        namespace,
        'certificateauthorities.edgeward.dev',
        'client-ca',
        '--wait=false',
      ]);
      await eventually('DeleteBlocked', async () =>
        condition(await getCr('certificateauthorities', 'client-ca'), 'Ready')?.reason === 'DeleteBlocked'
          ? true
          : undefined,
      );
      expect((await t.api('GET', `/certificate_authorities/${caId}`)).status).toBe(200);
      await kubectl(['delete', '-n', namespace, 'tlsedges.edgeward.dev', 'clients', '--wait=false']);
      await waitGone('tlsedges', 'clients');
      await eventually(
        'the CA deleted once unused',
        async () => ((await getCr('certificateauthorities', 'client-ca')) ? undefined : true),
        60_000,
      );
      expect((await t.api('GET', `/certificate_authorities/${caId}`)).status).toBe(404);
    } finally {
      workspace.cleanup();
    }
  });

  it('serves a reserved address with a TCPEdge: backend it keeps, policy added then dropped, deleted with the CR', async () => {
    await apply(yamlOf('ReservedAddress', 'tcp-addr', { description: 'for the tcp edge' }));
    const addr = (await waitFor('reservedaddresses', 'tcp-addr')).status?.addr as string;
    expect(addr).toMatch(/:\d+$/);
    const policy = {
      inbound: [
        { name: 'deny-bad', expressions: ["conn.client_ip == '192.0.2.1'"], actions: [{ type: 'deny' }] },
      ],
    };
    const tcp = (spec: Record<string, unknown>) =>
      yamlOf('TCPEdge', 'ssh', { hostports: [addr], backend: { labels: { app: 'ssh' } }, ...spec });
    await apply(tcp({ policy }));
    const cr = await waitFor('tcpedges', 'ssh');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('edgtcp'));
    expect(cr.status?.hostports).toEqual([addr]);
    const backendId = cr.status?.backendId as string;
    type TcpRead = {
      hostports: string[];
      backend: { backend: { id: string } };
      policy: { inbound: { name: string; expressions: string[]; actions: { type: string }[] }[] } | null;
    };
    const remote = (await t.api('GET', `/edges/tcp/${id}`)).body as TcpRead;
    expect(remote.hostports).toEqual([addr]);
    expect(remote.backend.backend.id).toBe(backendId);
    expect(remote.policy?.inbound).toEqual([
      {
        name: 'deny-bad',
        expressions: ["conn.client_ip == '192.0.2.1'"],
        actions: [{ type: 'deny', config: null }],
      },
    ]);
    await expectNoDrift('tcpedges', 'TCPEdge', 'ssh');

    await apply(tcp({}));
    await waitFor('tcpedges', 'ssh');
    await eventually('policy module removed', async () =>
      ((await t.api('GET', `/edges/tcp/${id}`)).body as TcpRead).policy === null ? true : undefined,
    );

    await kubectl(['delete', '-n', namespace, 'tcpedges.edgeward.dev', 'ssh', '--wait=false']);
    await waitGone('tcpedges', 'ssh');
    expect((await t.api('GET', `/edges/tcp/${id}`)).status).toBe(404);
    expect((await t.api('GET', `/backends/tunnel_group/${backendId}`)).status).toBe(404);
  });

  it('configures an HTTPSEdge: hostports and the minimum TLS version, changed in place', async () => {
    const host = `www-${suffix}.example.com:443`;
    const https = (minVersion: string) =>
      yamlOf('HTTPSEdge', 'www', { description: 'site', hostports: [host], tlsTermination: { minVersion } });
    await apply(https('1.2'));
    const cr = await waitFor('httpsedges', 'www');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('edghts'));
    type HttpsRead = {
      hostports: string[];
      tls_termination: { terminate_at: string; min_version: string } | null;
    };
    const remote = (await t.api('GET', `/edges/https/${id}`)).body as HttpsRead;
    expect(remote.hostports).toEqual([host]);
    expect(remote.tls_termination).toMatchObject({ terminate_at: 'edge', min_version: '1.2' });
    await expectNoDrift('httpsedges', 'HTTPSEdge', 'www');

    await apply(https('1.3'));
    const updated = await waitFor('httpsedges', 'www');
    expect(condition(updated, 'Ready')?.reason).toBe('Updated');
    expect(((await t.api('GET', `/edges/https/${id}`)).body as HttpsRead).tls_termination?.min_version).toBe(
      '1.3',
    );
  });

  it('reports a spec the server refuses as InvalidSpec', async () => {
    // Kubernetes counts characters, the server bytes: 200 two-byte characters pass the CRD only.
    await apply(yamlOf('ReservedAddress', 'too-long', { description: 'é'.repeat(200) }));
    const cr = await waitFor('reservedaddresses', 'too-long', 'False', 'InvalidSpec');
    expect(cr.status?.id).toBeUndefined();
  });

  it('writes the credential token to an owned Secret, after its BotUser owner is Ready', async () => {
    await apply(
      yamlOf('TunnelCredential', 'agent', {
        description: `agent-${suffix}`,
        acl: ['bind:*.example.com'],
        ownerRef: { name: 'agent-bot' },
      }),
    );
    await waitFor('tunnelcredentials', 'agent', 'False', 'ReferenceNotReady');
    expect(await credentialRows(`agent-${suffix}`)).toEqual([]);

    await apply(yamlOf('BotUser', 'agent-bot', {}));
    const bot = await waitFor('botusers', 'agent-bot');
    const cr = await waitFor('tunnelcredentials', 'agent');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('cr'));
    expect(cr.status?.ownerId).toBe(bot.status?.id);
    expect(cr.status?.tokenSecretName).toBe('agent-token');
    const remote = await t.api('GET', `/credentials/${id}`);
    expect(remote.body).toMatchObject({
      id,
      owner_id: bot.status?.id,
      acl: ['bind:*.example.com'],
      token: null,
    });

    const secret = (await getSecret('agent-token')) as Secret;
    expect(secret.type).toBe('Opaque');
    expect(Object.keys(secret.data ?? {})).toEqual(['token']);
    expect(secret.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'TunnelCredential', uid: cr.metadata.uid, controller: true }),
    ]);
    const token = tokenOf(secret);
    expect(token).toMatch(/^ewt_[A-Za-z0-9_-]{43}$/);
    const rows = await credentialRows(`agent-${suffix}`);
    expect(rows).toEqual([expect.objectContaining({ id, token_hash: hashToken(token) })]);

    // Change the ACL: the same credential (and token) is updated in place.
    await apply(
      yamlOf('TunnelCredential', 'agent', {
        description: `agent-${suffix}`,
        acl: ['*'],
        ownerRef: { name: 'agent-bot' },
      }),
    );
    await eventually('acl on the server', async () => {
      const now = await t.api('GET', `/credentials/${id}`);
      return JSON.stringify(now.body.acl) === '["*"]' ? true : undefined;
    });
    expect(tokenOf((await getSecret('agent-token')) as Secret)).toBe(token);

    await kubectl(['delete', '-n', namespace, 'tunnelcredentials.edgeward.dev', 'agent', '--wait=false']);
    await waitGone('tunnelcredentials', 'agent');
    expect((await t.api('GET', `/credentials/${id}`)).status).toBe(404);
  });

  it('refuses to overwrite a Secret it does not own (SecretConflict) and creates nothing', async () => {
    await kubectl(['create', 'secret', 'generic', '-n', namespace, 'foreign', '--from-literal=token=mine']);
    await apply(
      yamlOf('TunnelCredential', 'clash', { description: `clash-${suffix}`, tokenSecretName: 'foreign' }),
    );
    await waitFor('tunnelcredentials', 'clash', 'False', 'SecretConflict');
    expect(await credentialRows(`clash-${suffix}`)).toEqual([]);
    expect(tokenOf((await getSecret('foreign')) as Secret)).toBe('mine');
  });

  it('replaces the credential when its token Secret is deleted or edited: new token, old one gone', async () => {
    await apply(yamlOf('TunnelCredential', 'reissue', { description: `reissue-${suffix}` }));
    const first = await waitFor('tunnelcredentials', 'reissue');
    const firstId = first.status?.id as string;
    const firstToken = tokenOf((await getSecret('reissue-token')) as Secret);

    await kubectl(['delete', 'secret', '-n', namespace, 'reissue-token']);
    const second = await eventually('a replacement credential', async () => {
      const cr = await getCr('tunnelcredentials', 'reissue');
      return cr?.status?.id !== firstId && condition(cr, 'Ready')?.status === 'True' ? cr : undefined;
    });
    expect(condition(second, 'Ready')?.reason).toBe('Replaced');
    const secondId = second.status?.id as string;
    const secondSecret = await eventually('the new token Secret', () => getSecret('reissue-token'));
    const secondToken = tokenOf(secondSecret);
    expect(secondToken).not.toBe(firstToken);
    expect(await credentialRows(`reissue-${suffix}`)).toEqual([
      expect.objectContaining({ id: secondId, token_hash: hashToken(secondToken) }),
    ]);
    expect((await t.api('GET', `/credentials/${firstId}`)).status).toBe(404);

    // A token edited by hand is no longer the one the server knows: replaced as well.
    const tampered = Buffer.from('ewt_not-the-real-token', 'utf8').toString('base64');
    await kubectl([
      'patch',
      'secret',
      '-n',
      namespace,
      'reissue-token',
      '--type=merge',
      '-p',
      JSON.stringify({ data: { token: tampered } }),
    ]);
    const third = await eventually('a second replacement', async () => {
      const cr = await getCr('tunnelcredentials', 'reissue');
      return cr?.status?.id !== secondId && condition(cr, 'Ready')?.status === 'True' ? cr : undefined;
    });
    const thirdToken = tokenOf((await getSecret('reissue-token')) as Secret);
    expect(await credentialRows(`reissue-${suffix}`)).toEqual([
      expect.objectContaining({ id: third.status?.id, token_hash: hashToken(thirdToken) }),
    ]);
  });

  it('adopts a credential only with its token: waits with TokenUnavailable, then takes over the Secret', async () => {
    const created = await t.api('POST', '/credentials', { description: `adopted-${suffix}` });
    expect(created.status).toBe(201);
    const { id, token } = created.body as { id: string; token: string };
    await apply(
      yamlOf(
        'TunnelCredential',
        'adopted',
        { description: `adopted-${suffix}` },
        { 'edgeward.dev/adopt-id': id },
      ),
    );
    await waitFor('tunnelcredentials', 'adopted', 'False', 'TokenUnavailable');

    await kubectl([
      'create',
      'secret',
      'generic',
      '-n',
      namespace,
      'adopted-token',
      `--from-literal=token=${token}`,
    ]);
    await kubectl(['label', '-n', namespace, 'tunnelcredentials.edgeward.dev', 'adopted', 'poke=adopt']);
    const cr = await waitFor('tunnelcredentials', 'adopted');
    expect(cr.status?.id).toBe(id);
    expect(condition(cr, 'Ready')?.reason).toBe('Adopted');
    const secret = (await getSecret('adopted-token')) as Secret;
    expect(tokenOf(secret)).toBe(token);
    expect(secret.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'TunnelCredential', uid: cr.metadata.uid, controller: true }),
    ]);
    // Adopted, not replaced: still the one credential with the token it was created with.
    expect(await credentialRows(`adopted-${suffix}`)).toEqual([
      expect.objectContaining({ id, token_hash: hashToken(token) }),
    ]);
    await expectNoDrift('tunnelcredentials', 'TunnelCredential', 'adopted');
  });

  it('remembers a backend it made when the edge create fails, and deletes it with the CR', async () => {
    const hostport = `taken-${suffix}.example.com:443`;
    expect((await t.api('POST', '/edges/tls', { hostports: [hostport] })).status).toBe(201);
    await apply(
      yamlOf('TLSEdge', 'clashing', { hostports: [hostport], backend: { labels: { app: 'clash' } } }),
    );
    const cr = await waitFor('tlsedges', 'clashing', 'False', 'Conflict');
    expect(cr.status?.id).toBeUndefined();
    const backendId = cr.status?.backendId as string;
    expect(backendId).toMatch(idPattern('bkdtg'));
    expect((await t.api('GET', `/backends/tunnel_group/${backendId}`)).status).toBe(200);

    await kubectl(['delete', '-n', namespace, 'tlsedges.edgeward.dev', 'clashing', '--wait=false']);
    await waitGone('tlsedges', 'clashing');
    expect((await t.api('GET', `/backends/tunnel_group/${backendId}`)).status).toBe(404);
  });

  it('after a SIGKILL in the middle of 50 creates, a restart makes no duplicates and loses no token', async () => {
    const prefix = `bulk-${suffix}-`;
    const names = Array.from({ length: 50 }, (_, i) => `bulk-${i}`);
    // Paced (10 creates a second, no burst), so the kill lands in the middle of the 50 creates
    // however fast the machine is; the restarted operator runs at the harness's pace.
    await h.stopOperator('SIGTERM');
    h.startOperator(['--api-qps', '10', '--api-burst', '1']);
    await apply(
      ...names.map((name) => yamlOf('TunnelCredential', name, { description: `${prefix}${name}` })),
    );
    const deadline = Date.now() + 60_000;
    while ((await credentialRows(prefix)).length < 3) {
      if (Date.now() > deadline) throw new Error(`no credentials created\n${h.operatorOutput}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await h.stopOperator('SIGKILL');
    const atKill = (await credentialRows(prefix)).length;
    expect(atKill).toBeLessThan(50);

    h.startOperator();
    for (const name of names) await waitFor('tunnelcredentials', name, 'True', undefined, 90_000);

    const rows = await credentialRows(prefix);
    expect(rows).toHaveLength(50);
    expect(new Set(rows.map((row) => row.description)).size).toBe(50);
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const name of names) {
      const cr = (await getCr('tunnelcredentials', name)) as Cr;
      const row = byId.get(cr.status?.id as string);
      expect(row?.description).toBe(`${prefix}${name}`);
      const secret = (await getSecret(`${name}-token`)) as Secret;
      expect(hashToken(tokenOf(secret))).toBe(row?.token_hash);
    }
  }, 240_000);
});
