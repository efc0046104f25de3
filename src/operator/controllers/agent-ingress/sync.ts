import type { EdgewardClient } from '../../../client/index.js';
import type { AgentIngress } from '../../../schemas/agent-ingresses.js';
import type { AgentIngressSpec, AgentIngressStatus } from '../../crds/definitions/agent-ingress.js';
import { sameJson } from '../../runtime/same-json.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import { describedFields } from '../shared/described-fields.js';
import { certificateConditions } from './certificate-ready.js';

export type AgentIngressObject = ManagedObject & { spec: AgentIngressSpec; status?: AgentIngressStatus };

/** The certificate management policy as the server shows it (its defaults filled in), or null. */
function desiredPolicy(object: AgentIngressObject) {
  const policy = object.spec.certificateManagementPolicy;
  return policy
    ? { authority: policy.authority ?? 'letsencrypt', private_key_type: policy.privateKeyType ?? 'rsa' }
    : null;
}

/**
 * AgentIngress -> `/agent_ingresses`: a domain the user owns (immutable: an adopted ingress of
 * another domain is InvalidSpec) and its certificate management policy. Status carries what the
 * user must act on: the NS records to set, the regional domains, and the certificate job, summed up
 * by the CertificateReady condition (certificate-ready.ts). The server changes the job on its own,
 * so while one is under way the ingress is read again before the periodic resync.
 */
export function agentIngressSync(
  api: EdgewardClient,
): ResourceSync<AgentIngressObject, undefined, AgentIngress> {
  return {
    resolve: async () => ({ ready: true, value: undefined }),
    get: (id) => api.agentIngresses.get(id),
    create: (object, _resolved, options) =>
      api.agentIngresses.create(
        {
          ...describedFields(object.spec),
          domain: object.spec.domain,
          certificate_management_policy: desiredPolicy(object),
        },
        options,
      ),
    async update(object, _resolved, remote) {
      if (remote.domain !== object.spec.domain) {
        throw new TerminalSyncError(
          'InvalidSpec',
          `spec.domain: ${remote.id} is for ${remote.domain}; the domain of an agent ingress cannot change`,
        );
      }
      const patch: Record<string, unknown> = {};
      const description = object.spec.description ?? '';
      const metadata = object.spec.metadata ?? '';
      if (description !== remote.description) patch.description = description;
      // The server leaves metadata out when it is empty.
      if (metadata !== (remote.metadata ?? '')) patch.metadata = metadata;
      const policy = desiredPolicy(object);
      if (!sameJson(policy, remote.certificate_management_policy))
        patch.certificate_management_policy = policy;
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.agentIngresses.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.agentIngresses.delete(id),
    statusFields: (_object, remote) => {
      const certificate = remote.certificate_management_status;
      const job = certificate?.provisioning_job;
      return {
        nsTargets: remote.ns_targets,
        regionDomains: remote.region_domains,
        certificateManagementStatus: certificate
          ? {
              renewsAt: certificate.renews_at,
              provisioningJob: job
                ? {
                    errorCode: job.error_code,
                    msg: job.msg,
                    startedAt: job.started_at,
                    retriesAt: job.retries_at,
                  }
                : undefined,
            }
          : undefined,
      };
    },
    extraConditions: async (object, remote) =>
      certificateConditions(object.status?.conditions, remote.certificate_management_status),
  };
}
