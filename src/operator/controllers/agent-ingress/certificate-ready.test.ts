import { describe, expect, it } from 'vitest';
import { fakeEdgewardClient } from '../../../../test/support/fake/edgeward-client.js';
import type {
  AgentIngress,
  AgentIngressCertJob,
  AgentIngressCertStatus,
} from '../../../schemas/agent-ingresses.js';
import { type Condition, setCondition } from '../../runtime/conditions.js';
import {
  CERTIFICATE_READY,
  certificateConditions,
  certificateReadyCondition,
  certificateRecheckMs,
  MAX_RECHECK_MS,
  MIN_RECHECK_MS,
} from './certificate-ready.js';
import { type AgentIngressObject, agentIngressSync } from './sync.js';

const NOW = Date.parse('2025-06-01T12:00:00Z');
const at = (offsetMs: number) => new Date(NOW + offsetMs).toISOString().replace(/\.\d{3}Z$/, 'Z');

const issued: AgentIngressCertStatus = { renews_at: at(60 * 86_400_000), provisioning_job: null };
const job = (fields: Partial<AgentIngressCertJob>): AgentIngressCertStatus => ({
  renews_at: at(-60_000),
  provisioning_job: {
    msg: 'ordering a certificate from the CA',
    started_at: at(-60_000),
    retries_at: at(240_000),
    ...fields,
  },
});
const dnsFailed = job({
  error_code: 'DNS_ERROR',
  msg: 'tunnel.eu.example.com: could not resolve tunnel.eu.example.com',
  retries_at: at(120_000),
});
const internalFailed = job({
  error_code: 'INTERNAL_ERROR',
  msg: 'the CA answered 503',
  retries_at: at(30_000),
});

/** The condition as it would stand in status after `update`. */
function standing(update: ReturnType<typeof certificateReadyCondition>): Condition | undefined {
  return update ? setCondition([], update, { observedGeneration: 1 })[0] : undefined;
}

describe('the CertificateReady condition', () => {
  it('is absent without a policy (no certificate status)', () => {
    expect(certificateReadyCondition(null, undefined, NOW)).toBeUndefined();
    expect(certificateReadyCondition(undefined, undefined, NOW)).toBeUndefined();
  });

  it('is True Issued once a certificate is in force and no job runs', () => {
    expect(certificateReadyCondition(issued, undefined, NOW)).toEqual({
      type: CERTIFICATE_READY,
      status: 'True',
      reason: 'Issued',
      message: 'a certificate for the regional domains is in force',
    });
  });

  it('is False Provisioning with the job’s words while the first certificate is obtained', () => {
    const pending = job({
      msg: 'waiting for its first ACME order; the NS records of example.com must point at ns1',
    });
    expect(certificateReadyCondition(pending, undefined, NOW)).toEqual({
      type: CERTIFICATE_READY,
      status: 'False',
      reason: 'Provisioning',
      message: 'waiting for its first ACME order; the NS records of example.com must point at ns1',
    });
    // Still provisioning after a while: the same reason, the job's current words.
    const provisioning = standing(certificateReadyCondition(pending, undefined, NOW));
    expect(certificateReadyCondition(job({}), provisioning, NOW)).toMatchObject({
      status: 'False',
      reason: 'Provisioning',
      message: 'ordering a certificate from the CA',
    });
  });

  it('stays True Issued through a renewal that has not failed: the certificate in force is still served', () => {
    const before = standing(certificateReadyCondition(issued, undefined, NOW));
    expect(
      certificateReadyCondition(job({ msg: 'renewing a certificate from the CA' }), before, NOW),
    ).toEqual({
      type: CERTIFICATE_READY,
      status: 'True',
      reason: 'Issued',
      message: 'a certificate for the regional domains is in force; a new one is being obtained',
    });
  });

  it('is False DnsError with the CA’s words on DNS_ERROR, and False Retrying on INTERNAL_ERROR', () => {
    expect(certificateReadyCondition(dnsFailed, undefined, NOW)).toEqual({
      type: CERTIFICATE_READY,
      status: 'False',
      reason: 'DnsError',
      message: 'tunnel.eu.example.com: could not resolve tunnel.eu.example.com',
    });
    expect(certificateReadyCondition(internalFailed, undefined, NOW)).toEqual({
      type: CERTIFICATE_READY,
      status: 'False',
      reason: 'Retrying',
      message: 'the CA answered 503',
    });
    // A failed renewal is a failure too: the user has until the current certificate expires.
    const before = standing(certificateReadyCondition(issued, undefined, NOW));
    expect(certificateReadyCondition(dnsFailed, before, NOW)).toMatchObject({
      status: 'False',
      reason: 'DnsError',
    });
  });

  it('keeps the failure’s message while its retry runs (the server’s msg then tells the retry’s progress)', () => {
    const failed = standing(certificateReadyCondition(dnsFailed, undefined, NOW));
    // The retry time has passed: the server has started again, with the error code of the last failure.
    const retrying = job({
      error_code: 'DNS_ERROR',
      msg: 'ordering a certificate from the CA',
      retries_at: at(-1_000),
    });
    expect(certificateReadyCondition(retrying, failed, NOW)).toMatchObject({
      reason: 'DnsError',
      message: 'tunnel.eu.example.com: could not resolve tunnel.eu.example.com',
    });
    // Seen for the first time in that state (e.g. after a restart): the job's words.
    expect(certificateReadyCondition(retrying, undefined, NOW)).toMatchObject({
      reason: 'DnsError',
      message: 'ordering a certificate from the CA',
    });
    // A failure of another kind says its own words.
    expect(
      certificateReadyCondition(
        { ...retrying, provisioning_job: { ...retrying.provisioning_job!, error_code: 'INTERNAL_ERROR' } },
        failed,
        NOW,
      ),
    ).toMatchObject({
      reason: 'Retrying',
      message: 'ordering a certificate from the CA',
    });
  });
});

describe('when the certificate status is read again', () => {
  it('not before the periodic resync when nothing is under way', () => {
    expect(certificateRecheckMs(null, NOW)).toBeUndefined();
    expect(certificateRecheckMs(issued, NOW)).toBeUndefined();
  });

  it('a failed job: just after its retry time, within 5 s and 5 minutes', () => {
    expect(certificateRecheckMs(dnsFailed, NOW)).toBe(121_000);
    expect(certificateRecheckMs(job({ error_code: 'DNS_ERROR', retries_at: at(2_000) }), NOW)).toBe(
      MIN_RECHECK_MS,
    );
    expect(certificateRecheckMs(job({ error_code: 'DNS_ERROR', retries_at: at(86_400_000) }), NOW)).toBe(
      MAX_RECHECK_MS,
    );
  });

  it('a running job: after half its age, from 5 s up to 5 minutes', () => {
    expect(certificateRecheckMs(job({ started_at: at(-1_000) }), NOW)).toBe(MIN_RECHECK_MS);
    expect(certificateRecheckMs(job({ started_at: at(-60_000) }), NOW)).toBe(30_000);
    // A server without ACME: the job waits for good, looked at every 5 minutes.
    expect(certificateRecheckMs(job({ started_at: at(-86_400_000), retries_at: at(3_600_000) }), NOW)).toBe(
      MAX_RECHECK_MS,
    );
    // A retry under way runs since its retry time, not since the job's first start.
    const retrying = job({ error_code: 'DNS_ERROR', started_at: at(-86_400_000), retries_at: at(-20_000) });
    expect(certificateRecheckMs(retrying, NOW)).toBe(10_000);
  });

  it('never sooner than 5 s, whatever the times say', () => {
    expect(certificateRecheckMs(job({ started_at: 'not a time', retries_at: 'nor this' }), NOW)).toBe(
      MIN_RECHECK_MS,
    );
    expect(certificateRecheckMs(job({ started_at: at(10_000) }), NOW)).toBe(MIN_RECHECK_MS);
  });
});

describe('the AgentIngress extra conditions', () => {
  it('sets CertificateReady with a requeue while a job is under way, and removes it without a policy', () => {
    expect(certificateConditions(undefined, dnsFailed, NOW)).toEqual({
      conditions: [expect.objectContaining({ type: CERTIFICATE_READY, reason: 'DnsError' })],
      requeueAfterMs: 121_000,
    });
    expect(certificateConditions(undefined, issued, NOW)).toEqual({
      conditions: [expect.objectContaining({ type: CERTIFICATE_READY, reason: 'Issued' })],
    });
    expect(certificateConditions(undefined, null, NOW)).toEqual({
      conditions: [],
      removed: [CERTIFICATE_READY],
    });
  });

  it('are what the sync reports, from the ingress it read and the condition in the object’s status', async () => {
    const sync = agentIngressSync(fakeEdgewardClient());
    const remote: AgentIngress = {
      id: 'agin_1',
      uri: '/agent_ingresses/agin_1',
      created_at: at(-86_400_000),
      description: '',
      domain: 'example.com',
      ns_targets: ['ns1.edgeward-dns.net'],
      region_domains: ['tunnel.eu.example.com'],
      certificate_management_policy: { authority: 'letsencrypt', private_key_type: 'rsa' },
      certificate_management_status: job({ msg: 'renewing a certificate from the CA' }),
    };
    const object: AgentIngressObject = {
      metadata: { name: 'a', namespace: 'ns', generation: 1 },
      spec: { deletionPolicy: 'Delete', domain: 'example.com', certificateManagementPolicy: {} },
      status: {
        conditions: setCondition([], certificateReadyCondition(issued, undefined)!, {
          observedGeneration: 1,
        }),
      },
    };
    const extra = await sync.extraConditions?.(object, remote);
    expect(extra?.conditions).toEqual([expect.objectContaining({ status: 'True', reason: 'Issued' })]);
    expect(extra?.requeueAfterMs).toBeGreaterThanOrEqual(MIN_RECHECK_MS);
    const disabled = await sync.extraConditions?.(object, { ...remote, certificate_management_status: null });
    expect(disabled).toEqual({ conditions: [], removed: [CERTIFICATE_READY] });
  });
});
