import type { AgentIngressCertStatus } from '../../../schemas/agent-ingresses.js';
import { type Condition, type ConditionUpdate, getCondition } from '../../runtime/conditions.js';
import type { ExtraConditions } from '../managed/managed-resource.js';

/**
 * The `CertificateReady` condition of an AgentIngress with a certificate management policy: how its
 * certificate is doing, as the server's `certificate_management_status` says. Ready stays about the
 * spec (the ingress exists as specified); an ingress whose certificate cannot be issued is Ready and
 * CertificateReady=False. Without a policy the condition is absent.
 *
 * - True `Issued`: a certificate is in force and no job failed (a renewal under way included);
 * - False `DnsError`: the last attempt failed with `DNS_ERROR`, which the user must fix (the domain's
 *   NS records, a firewall, ...); the message is the CA's words;
 * - False `Retrying`: the last attempt failed with `INTERNAL_ERROR` (the CA or the server), retried;
 * - False `Provisioning`: the first certificate (or one for a changed policy) is being obtained.
 */
export const CERTIFICATE_READY = 'CertificateReady';

/** The shortest and longest wait before the status of a job under way is read again. */
export const MIN_RECHECK_MS = 5_000;
export const MAX_RECHECK_MS = 5 * 60_000;
/** After a failure, looked at again this long after `retries_at`: the retry has started by then. */
const RETRY_SLACK_MS = 1_000;

/**
 * The condition for a certificate status, or undefined when there is none (no policy). `previous`
 * is the condition as it stands: the server's status does not say whether a certificate is in
 * force while a job runs, so a job without an error after True is a renewal (the certificate in
 * force stays served), and a retry under way keeps the failure's message (the server's `msg` then
 * tells the retry's progress, which status.certificateManagementStatus shows).
 */
export function certificateReadyCondition(
  status: AgentIngressCertStatus | null | undefined,
  previous: Condition | undefined,
  now: number = Date.now(),
): ConditionUpdate | undefined {
  if (!status) return undefined;
  const job = status.provisioning_job;
  if (!job) {
    return {
      type: CERTIFICATE_READY,
      status: 'True',
      reason: 'Issued',
      message: 'a certificate for the regional domains is in force',
    };
  }
  if (job.error_code === undefined) {
    if (previous?.status === 'True') {
      return {
        type: CERTIFICATE_READY,
        status: 'True',
        reason: 'Issued',
        message: 'a certificate for the regional domains is in force; a new one is being obtained',
      };
    }
    return { type: CERTIFICATE_READY, status: 'False', reason: 'Provisioning', message: job.msg };
  }
  const reason = job.error_code === 'DNS_ERROR' ? 'DnsError' : 'Retrying';
  const retrying = Date.parse(job.retries_at) <= now;
  const message =
    retrying && previous?.status === 'False' && previous.reason === reason ? previous.message : job.msg;
  return { type: CERTIFICATE_READY, status: 'False', reason, message };
}

/**
 * How soon the status is worth reading again, or undefined when nothing is under way (the periodic
 * resync suffices). The server's changes to it come with no change to the CR, so a job is watched:
 * a failed one from just after its retry time, a running one after half its age (5 s at first, at
 * most 5 minutes: an order takes seconds, one that has waited long will likely wait longer). Never
 * shorter than 5 s or longer than 5 minutes.
 */
export function certificateRecheckMs(
  status: AgentIngressCertStatus | null | undefined,
  now: number = Date.now(),
): number | undefined {
  const job = status?.provisioning_job;
  if (!job) return undefined;
  const retriesAt = Date.parse(job.retries_at);
  if (job.error_code !== undefined && retriesAt > now) return bounded(retriesAt - now + RETRY_SLACK_MS);
  // Running since it started, or since its retry time when it is a retry.
  const since = job.error_code !== undefined ? retriesAt : Date.parse(job.started_at);
  return bounded((now - since) / 2);
}

function bounded(ms: number): number {
  if (!Number.isFinite(ms)) return MIN_RECHECK_MS;
  return Math.round(Math.min(Math.max(ms, MIN_RECHECK_MS), MAX_RECHECK_MS));
}

/** The AgentIngress's extra conditions from the status it read; a job under way is read again soon. */
export function certificateConditions(
  previous: readonly Condition[] | undefined,
  status: AgentIngressCertStatus | null | undefined,
  now: number = Date.now(),
): ExtraConditions {
  const condition = certificateReadyCondition(status, getCondition(previous, CERTIFICATE_READY), now);
  if (!condition) return { conditions: [], removed: [CERTIFICATE_READY] };
  const requeueAfterMs = certificateRecheckMs(status, now);
  return requeueAfterMs === undefined
    ? { conditions: [condition] }
    : { conditions: [condition], requeueAfterMs };
}
