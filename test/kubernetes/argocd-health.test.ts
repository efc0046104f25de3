import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { OpensslWorkspace } from '../support/openssl.js';
import { type Cr, OperatorHarness } from '../support/operator-harness.js';

/**
 * The Argo CD health checks of config/argocd, run by Argo CD's own Lua (gopher-lua, through the
 * argocd-lua test tool) against objects of the test cluster in each state the operator reports,
 * and against the fixtures of health_test.yaml (Argo CD's layout), which were captured from those
 * objects: `EDGEWARD_CAPTURE_ARGOCD_FIXTURES=1` rewrites them from this run.
 */

const run = promisify(execFile);
const HEALTH_DIR = fileURLToPath(new URL('../../config/argocd/health/', import.meta.url));
const SCRIPT = `${HEALTH_DIR}health.lua`;
const CAPTURE = process.env.EDGEWARD_CAPTURE_ARGOCD_FIXTURES === '1';

interface Health {
  status: string;
  message: string;
}

interface HealthTests {
  tests: Array<{ healthStatus: Health; inputPath: string }>;
}

/** Health of each object as Argo CD computes it. */
async function healthOf(objects: unknown[]): Promise<Health[]> {
  const child = run(inject('argocdLua'), [SCRIPT], { maxBuffer: 16 * 1024 * 1024 });
  child.child.stdin?.end(JSON.stringify(objects));
  try {
    return JSON.parse((await child).stdout) as Health[];
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`argocd-lua failed on ${SCRIPT}: ${stderr}`, { cause: error });
  }
}

/** What Argo CD's health check reads, and nothing the cluster made up (uids, times, managedFields). */
function fixtureOf(cr: Cr & { apiVersion?: string; kind?: string }) {
  const annotations = Object.fromEntries(
    Object.entries(cr.metadata.annotations ?? {}).filter(([key]) => key.startsWith('edgeward.dev/')),
  );
  const conditions = cr.status?.conditions?.map(({ type, status, reason, message, observedGeneration }) => ({
    type,
    status,
    reason,
    message,
    observedGeneration,
  }));
  return {
    apiVersion: cr.apiVersion,
    kind: cr.kind,
    metadata: {
      name: cr.metadata.name,
      generation: cr.metadata.generation,
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec: cr.spec,
    status: { ...(cr.status?.id ? { id: cr.status.id } : {}), conditions },
  };
}

const h = new OperatorHarness('argocd');
const { apply, yamlOf, getCr, waitFor, suffix, namespace } = h;
const openssl = new OpensslWorkspace();

beforeAll(async () => {
  await h.start();
});

afterAll(async () => {
  await h.stop();
  openssl.cleanup();
});

describe('Argo CD health of edgeward objects', () => {
  /** Each case: the object as the cluster shows it once the operator has reported, and its health. */
  const cases: Array<{ name: string; plural: string; expected: Health; object?: Cr }> = [];

  it('reads each state the operator reports on real objects', { timeout: 120_000 }, async () => {
    const key = openssl.key('ec');
    const otherKey = openssl.key('ec');
    const certificate = openssl.certificate({
      subject: '/CN=argocd.example.com',
      key,
      extensions: ['basicConstraints = CA:FALSE', 'subjectAltName = DNS:argocd.example.com'],
    });
    await apply(
      // A key that is not the certificate's: the server refuses the upload (400).
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'mismatched-key', namespace },
        stringData: { 'tls.key': otherKey.pem },
      }),
      // A Secret of the token's name that the operator does not own.
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'taken-token', namespace },
        stringData: { token: 'not the operator’s' },
      }),
    );
    await apply(
      yamlOf('IPPolicy', 'ready', {
        description: 'Argo CD: Healthy',
        rules: [{ cidr: '10.0.0.0/8', action: 'allow' }],
      }),
      yamlOf(
        'IPPolicy',
        'paused',
        { description: 'Argo CD: Suspended', rules: [] },
        { 'edgeward.dev/paused': 'true' },
      ),
      yamlOf(
        'IPPolicy',
        'adopt-missing',
        { description: 'Argo CD: Degraded' },
        { 'edgeward.dev/adopt-id': 'ipp_2fZ9yA6QnDk8Qb1cMxV0aRtLp3W' },
      ),
      yamlOf('TLSEdge', 'waiting', {
        description: 'Argo CD: Progressing while its policy does not exist',
        hostports: [`argocd-${suffix}.example.com:443`],
        ipRestriction: { ipPolicyRefs: [{ name: 'not-yet' }] },
      }),
      yamlOf('TLSCertificate', 'invalid', {
        description: 'Argo CD: Degraded, the key is not the certificate’s',
        certificatePem: certificate.pem,
        privateKeySecretRef: { name: 'mismatched-key', key: 'tls.key' },
      }),
      yamlOf('TunnelCredential', 'conflict', {
        description: 'Argo CD: Degraded, its token Secret is taken',
        tokenSecretName: 'taken-token',
      }),
      // Ready, but its certificate is not there yet (this server has no ACME CA: it never comes).
      yamlOf('AgentIngress', 'certificate-pending', {
        description: 'Argo CD: Progressing while its certificate is obtained',
        domain: `argocd-${suffix}.example.com`,
        certificateManagementPolicy: {},
      }),
    );
    const reported = (plural: string, name: string, reason: string) =>
      h.eventually(`${plural}/${name} reporting ${reason}`, async () => {
        const current = await getCr(plural, name);
        const conditions = current?.status?.conditions ?? [];
        const reportedNow = conditions.some(
          (c) => c.reason === reason && c.observedGeneration === current?.metadata.generation,
        );
        return reportedNow ? current : undefined;
      });
    cases.push(
      {
        name: 'ready',
        plural: 'ippolicies',
        expected: { status: 'Healthy', message: expect.any(String) as unknown as string },
        object: await waitFor('ippolicies', 'ready'),
      },
      {
        name: 'paused',
        plural: 'ippolicies',
        expected: { status: 'Suspended', message: 'Paused: edgeward.dev/paused is "true"' },
        object: await reported('ippolicies', 'paused', 'Paused'),
      },
      {
        name: 'adopt-missing',
        plural: 'ippolicies',
        expected: {
          status: 'Degraded',
          message: expect.stringMatching(/^AdoptTargetNotFound: .*does not exist/) as unknown as string,
        },
        object: await reported('ippolicies', 'adopt-missing', 'AdoptTargetNotFound'),
      },
      {
        name: 'waiting',
        plural: 'tlsedges',
        expected: { status: 'Progressing', message: expect.stringContaining('not-yet') as unknown as string },
        object: await reported('tlsedges', 'waiting', 'ReferenceNotReady'),
      },
      {
        name: 'invalid',
        plural: 'tlscertificates',
        expected: {
          status: 'Degraded',
          message: expect.stringMatching(/^InvalidSpec: /) as unknown as string,
        },
        object: await reported('tlscertificates', 'invalid', 'InvalidSpec'),
      },
      {
        name: 'conflict',
        plural: 'tunnelcredentials',
        expected: {
          status: 'Degraded',
          message: expect.stringMatching(/^SecretConflict: .*taken-token/) as unknown as string,
        },
        object: await reported('tunnelcredentials', 'conflict', 'SecretConflict'),
      },
      {
        name: 'certificate-pending',
        plural: 'agentingresses',
        expected: {
          status: 'Progressing',
          message: expect.stringMatching(/^Provisioning: no certificate is requested/) as unknown as string,
        },
        object: await reported('agentingresses', 'certificate-pending', 'Provisioning'),
      },
    );
    // A spec edit the operator has not reconciled yet reads as Progressing, even when Ready=True.
    const ready = cases[0]?.object as Cr;
    const edited = { ...ready, metadata: { ...ready.metadata, generation: ready.metadata.generation + 1 } };
    const health = await healthOf([...cases.map((c) => c.object), edited]);
    expect(health).toEqual([
      ...cases.map((c) => c.expected),
      {
        status: 'Progressing',
        message: `Waiting for the operator to reconcile generation ${ready.metadata.generation + 1}`,
      },
    ]);
  });

  it('never copies Argo CD’s tracking label or annotation onto the Secrets the operator writes', async () => {
    const tracked = JSON.parse(
      yamlOf(
        'TunnelCredential',
        'tracked',
        { description: 'synced by Argo CD' },
        {
          'argocd.argoproj.io/tracking-id': `edgeward-demo:edgeward.dev/TunnelCredential:${namespace}/tracked`,
        },
      ),
    ) as { metadata: Record<string, unknown> };
    tracked.metadata.labels = { 'app.kubernetes.io/instance': 'edgeward-demo' };
    await apply(JSON.stringify(tracked));
    const cr = await waitFor('tunnelcredentials', 'tracked');
    const secret = await h.getSecret(String(cr.status?.tokenSecretName));
    expect(secret?.data?.token).toBeTruthy();
    // Copied, Argo CD would list the Secret as part of the app and prune it as not in Git.
    expect(Object.keys(secret?.metadata.labels ?? {})).not.toContain('app.kubernetes.io/instance');
    expect(Object.keys(secret?.metadata.annotations ?? {})).not.toContain('argocd.argoproj.io/tracking-id');
  });

  it('gives the health_test.yaml fixtures (captured from those objects) the health it says', async () => {
    if (CAPTURE) {
      expect(cases.length, 'the capture needs the first test to have run').toBeGreaterThan(0);
      const captured = await healthOf(cases.map((c) => c.object));
      const tests = cases.map((c, i) => {
        const inputPath = `testdata/${c.name}.yaml`;
        writeFileSync(`${HEALTH_DIR}${inputPath}`, stringify(fixtureOf(c.object as Cr)));
        return { healthStatus: captured[i], inputPath };
      });
      writeFileSync(`${HEALTH_DIR}health_test.yaml`, stringify({ tests }));
    }
    const listed = parse(readFileSync(`${HEALTH_DIR}health_test.yaml`, 'utf8')) as HealthTests;
    const inputs = listed.tests.map((test) => parse(readFileSync(`${HEALTH_DIR}${test.inputPath}`, 'utf8')));
    expect(await healthOf(inputs)).toEqual(listed.tests.map((test) => test.healthStatus));
    expect(listed.tests.map((test) => test.healthStatus.status).sort()).toEqual(
      ['Degraded', 'Degraded', 'Degraded', 'Healthy', 'Progressing', 'Progressing', 'Suspended'].sort(),
    );
  });
});
