import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { freePort } from '../../src/dev-cluster/free-port.js';
import { ACME_DEFAULTS } from '../../src/server/acme/acme-settings.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { type Cr, condition, OperatorHarness } from '../support/operator-harness.js';
import { type Pebble, pebbleUnavailable, startPebble } from '../support/pebble.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * An AgentIngress's CertificateReady condition follows its certificate as the server obtains it by
 * ACME (a local Pebble validating against a real edge), with no change to the CR: the operator
 * reads the ingress again while a job is under way (src/operator/controllers/agent-ingress/
 * certificate-ready.ts), well before the periodic resync (10 minutes, the first one at least 5
 * away). A name whose DNS fails is DnsError (Degraded for Argo CD); once DNS is mended, the
 * server's retry issues the certificate and the condition turns True Issued (Healthy).
 */

const run = promisify(execFile);
const pebbleSkip = await pebbleUnavailable();
const HEALTH_SCRIPT = fileURLToPath(new URL('../../config/argocd/health/health.lua', import.meta.url));

const h = new OperatorHarness('agin-cert');
const { apply, yamlOf, getCr, waitFor, eventually, suffix } = h;
let pebble: Pebble | undefined;
let edge: TestEdge | undefined;

/** Argo CD's health of an object, by Argo CD's own Lua (the argocd-lua test tool). */
async function argocdHealth(object: Cr): Promise<{ status: string; message: string }> {
  const child = run(inject('argocdLua'), [HEALTH_SCRIPT]);
  child.child.stdin?.end(JSON.stringify([object]));
  return (JSON.parse((await child).stdout) as { status: string; message: string }[])[0] as {
    status: string;
    message: string;
  };
}

describeUnless(pebbleSkip, 'edgeward operator: an AgentIngress certificate obtained by ACME', () => {
  beforeAll(async () => {
    const tlsPort = await freePort();
    pebble = await startPebble({ httpPort: await freePort(), tlsPort, keyAlgorithm: 'ecdsa' });
    await h.start({
      acme: {
        ...ACME_DEFAULTS,
        directoryUrl: pebble.directoryUrl,
        email: 'certificates@example.com',
        caBundlePem: pebble.caBundlePem,
        challenges: ['tls-alpn-01'],
        // Retries within seconds once DNS is mended (the default waits a minute, then doubles).
        retryMinMs: 1_000,
        retryMaxMs: 4_000,
        pollMs: 2_000,
        pollMinMs: 200,
        pollMaxMs: 1_000,
        requestTimeoutMs: 5_000,
      },
    });
    // The edge answers the TLS-ALPN-01 challenges where Pebble validates them.
    edge = await startTestEdge(h.t, { tls: { host: '127.0.0.1', port: tlsPort } });
  }, 120_000);

  afterAll(async () => {
    await h.stop();
    await edge?.stop();
    await pebble?.stop();
  });

  it('says in CertificateReady how the certificate goes, as the server changes it: DnsError, then Issued', async () => {
    const domain = `agin-${suffix}.acme.test`;
    const broken = `tunnel.eu.${domain}`;
    await pebble?.failDns(broken);
    const started = Date.now();
    await apply(yamlOf('AgentIngress', 'certified', { domain, certificateManagementPolicy: {} }));
    const created = await waitFor('agentingresses', 'certified');
    const id = created.status?.id as string;
    const generation = created.metadata.generation;
    // At its first reconcile the server has not ordered yet (or has just failed).
    expect(condition(created, 'CertificateReady')).toMatchObject({
      status: 'False',
      reason: expect.stringMatching(/^(Provisioning|DnsError)$/),
    });

    /** Waits for CertificateReady's reason; returns the CR and when the server's status first showed it. */
    const certificateReady = async (reason: string, serverShows: (status: CertStatus) => boolean) => {
      const seenOnServer = eventually(`the server's status of ${id} to be ${reason}`, async () => {
        const read = await h.t.api<{ certificate_management_status: CertStatus }>(
          'GET',
          `/agent_ingresses/${id}`,
        );
        return serverShows(read.body.certificate_management_status) ? Date.now() : undefined;
      });
      // Awaited below; a timeout meanwhile must not surface as an unhandled rejection first.
      seenOnServer.catch(() => undefined);
      const cr = await eventually(`agentingresses/certified CertificateReady ${reason}`, async () => {
        const now = await getCr('agentingresses', 'certified');
        return condition(now, 'CertificateReady')?.reason === reason ? now : undefined;
      });
      return { cr, lagMs: Date.now() - (await seenOnServer) };
    };

    const failed = await certificateReady('DnsError', (s) => s?.provisioning_job?.error_code === 'DNS_ERROR');
    const dnsErrorAfterMs = Date.now() - started;
    // The CA's words; or, when the operator first looks while a retry already runs (the retries
    // here come every few seconds), the server's words for that retry.
    expect(condition(failed.cr, 'CertificateReady')).toMatchObject({
      status: 'False',
      message: expect.stringMatching(
        new RegExp(`${broken.replaceAll('.', '\\.')}|a certificate from the CA|finalizing the order`),
      ),
      observedGeneration: generation,
    });
    expect(failed.cr.status?.certificateManagementStatus).toMatchObject({
      provisioningJob: { errorCode: 'DNS_ERROR', msg: expect.any(String) },
    });
    // Nothing changed the CR: it is the requeue that read the server again. Ready is about the
    // spec and stays as it was.
    expect(failed.cr.metadata.generation).toBe(generation);
    expect(condition(failed.cr, 'Ready')).toMatchObject({ status: 'True', reason: 'Created' });
    expect(await argocdHealth(failed.cr)).toEqual({
      status: 'Degraded',
      message: expect.stringMatching(/^DnsError: ./),
    });

    await pebble?.restoreDns(broken);
    const issued = await certificateReady('Issued', (s) => s !== null && s.provisioning_job === null);
    expect(condition(issued.cr, 'CertificateReady')).toMatchObject({
      status: 'True',
      message: 'a certificate for the regional domains is in force',
    });
    expect(issued.cr.status?.certificateManagementStatus).toEqual({ renewsAt: expect.any(String) });
    expect(issued.cr.metadata.generation).toBe(generation);
    expect(await argocdHealth(issued.cr)).toMatchObject({ status: 'Healthy' });
    // The server's status reached the CR within the operator's recheck (5 s at first, half the
    // job's age later, a failed job's retry time): far sooner than any resync (5 minutes at least).
    expect(failed.lagMs).toBeLessThan(15_000);
    expect(issued.lagMs).toBeLessThan(15_000);
    process.stderr.write(
      `[agent-ingress certificate] DnsError on the CR ${dnsErrorAfterMs} ms after the apply, ` +
        `${failed.lagMs} ms after the server showed it; Issued ${issued.lagMs} ms after the server showed it\n`,
    );

    // Without a policy, there is no certificate to speak of: the condition goes.
    await apply(yamlOf('AgentIngress', 'certified', { domain }));
    const unmanaged = await eventually('CertificateReady gone', async () => {
      const now = await getCr('agentingresses', 'certified');
      return now && !condition(now, 'CertificateReady') && now.status?.observedGeneration === generation + 1
        ? now
        : undefined;
    });
    expect(unmanaged.status?.certificateManagementStatus).toBeUndefined();
    expect(await argocdHealth(unmanaged)).toMatchObject({ status: 'Healthy' });

    await h.delete('agentingresses', 'certified');
    await h.waitGone('agentingresses', 'certified');
  });
});

type CertStatus = {
  renews_at: string;
  provisioning_job: { error_code?: string; msg: string; started_at: string; retries_at: string } | null;
} | null;
