import { z } from 'zod';
import { describedInputFields, listOf, timestamp } from './common.js';

/**
 * Regional domains are `tunnel.<region>.<domain>` (see the server's agent-ingress-names), which adds
 * at most `tunnel.xx.` (10 characters) to the domain; a DNS name may have 253, so the domain 243.
 */
export const AGENT_INGRESS_DOMAIN_MAX_CHARS = 243;
const DNS_LABEL_MAX_CHARS = 63;

/** Why `domain` cannot be an agent ingress base domain, or undefined when it can. */
export function agentIngressDomainProblem(domain: string): string | undefined {
  if (domain === '') return 'must be a DNS name such as example.com';
  if (domain.length > AGENT_INGRESS_DOMAIN_MAX_CHARS) {
    return `must be at most ${AGENT_INGRESS_DOMAIN_MAX_CHARS} characters, so that its regional domains (tunnel.<region>.<domain>) stay within the 253 of a DNS name`;
  }
  if (domain.endsWith('.')) return 'must not end with a dot; write example.com, not example.com.';
  if (domain.includes('*')) return 'must not be a wildcard; give the base domain, e.g. example.com';
  if (domain !== domain.toLowerCase()) return 'must be lowercase';
  const labels = domain.split('.');
  if (labels.length < 2) return 'must have at least two labels, e.g. example.com';
  for (const label of labels) {
    if (label === '') return 'must not contain an empty label (two dots in a row or a leading dot)';
    if (label.length > DNS_LABEL_MAX_CHARS) {
      return `label '${label}' is longer than ${DNS_LABEL_MAX_CHARS} characters`;
    }
    if (!/^[a-z0-9-]+$/.test(label)) {
      return `label '${label}' may contain only lowercase letters, digits and hyphens`;
    }
    if (label.startsWith('-') || label.endsWith('-')) {
      return `label '${label}' must not start or end with a hyphen`;
    }
  }
  // A numeric top-level label means an IP address (or no real TLD): nothing to delegate with NS records.
  if (/^[0-9]+$/.test(labels.at(-1) ?? '')) return 'must be a DNS name, not an IP address';
  return undefined;
}

export const agentIngressDomain = z
  .string()
  .superRefine((value, ctx) => {
    const problem = agentIngressDomainProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({
    description: 'a domain the caller owns, base of the regional agent ingress domains; immutable',
    format: 'hostname',
    maxLength: AGENT_INGRESS_DOMAIN_MAX_CHARS,
    pattern: '^([a-z0-9-]+\\.)+[a-z0-9-]*[a-z-][a-z0-9-]*$',
  });

export const agentIngressCertAuthorities = ['letsencrypt'] as const;
export const agentIngressPrivateKeyTypes = ['rsa', 'ecdsa'] as const;

/** What callers send; omitted members take their defaults (`letsencrypt`, `rsa`). */
export const agentIngressCertPolicyInput = z
  .strictObject({
    authority: z
      .enum(agentIngressCertAuthorities)
      .optional()
      .meta({ description: 'certificate authority; the only supported value (and default) is letsencrypt' }),
    private_key_type: z
      .enum(agentIngressPrivateKeyTypes)
      .optional()
      .meta({ description: 'type of the private key: rsa (default) or ecdsa' }),
  })
  .meta({ description: 'automatic TLS certificate management; null disables it' });
export type AgentIngressCertPolicyInput = z.input<typeof agentIngressCertPolicyInput>;

export const agentIngressCertPolicy = z
  .object({
    authority: z.enum(agentIngressCertAuthorities),
    private_key_type: z.enum(agentIngressPrivateKeyTypes),
  })
  .meta({ id: 'AgentIngressCertPolicy' });
export type AgentIngressCertPolicy = z.infer<typeof agentIngressCertPolicy>;

export const agentIngressCertJob = z
  .object({
    error_code: z.enum(['INTERNAL_ERROR', 'DNS_ERROR']).optional().meta({
      description: 'present on failure: INTERNAL_ERROR is temporary, DNS_ERROR the user must correct',
    }),
    msg: z.string().meta({ description: 'current status or error' }),
    started_at: timestamp,
    retries_at: timestamp.meta({ description: 'time of the next attempt' }),
  })
  .meta({ id: 'AgentIngressCertJob' });
export type AgentIngressCertJob = z.infer<typeof agentIngressCertJob>;

export const agentIngressCertStatus = z
  .object({
    renews_at: timestamp.meta({ description: 'time of the next renewal request' }),
    provisioning_job: agentIngressCertJob
      .nullable()
      .meta({ description: 'the certificate being provisioned or renewed; null otherwise' }),
  })
  .meta({ id: 'AgentIngressCertStatus' });
export type AgentIngressCertStatus = z.infer<typeof agentIngressCertStatus>;

export const agentIngress = z
  .object({
    id: z.string(),
    uri: z.string().meta({ description: 'relative: /agent_ingresses/<id>' }),
    created_at: timestamp,
    description: z.string(),
    metadata: z.string().optional().meta({ description: 'absent when unset' }),
    domain: z.string(),
    ns_targets: z
      .array(z.string())
      .meta({ description: 'NS records to set for domain, delegating it to the service; fixed per domain' }),
    region_domains: z.array(z.string()).meta({
      description: 'regional agent ingress domains, tunnel.<region>.<domain>; may grow with regions',
    }),
    certificate_management_policy: agentIngressCertPolicy
      .nullable()
      .meta({ description: 'null means automatic management is disabled' }),
    certificate_management_status: agentIngressCertStatus
      .nullable()
      .meta({ description: 'null means automatic management is disabled' }),
  })
  .meta({ id: 'AgentIngress' });
export type AgentIngress = z.infer<typeof agentIngress>;

export const agentIngressCreate = z.strictObject({
  ...describedInputFields,
  domain: agentIngressDomain,
  certificate_management_policy: agentIngressCertPolicyInput.nullable().optional(),
});
export type AgentIngressCreate = z.input<typeof agentIngressCreate>;

/** `domain` is immutable, so it is not a member: sending it is an unknown field. */
export const agentIngressUpdate = z.strictObject({
  ...describedInputFields,
  certificate_management_policy: agentIngressCertPolicyInput.nullable().optional(),
});
export type AgentIngressUpdate = z.input<typeof agentIngressUpdate>;

export const agentIngressList = listOf('ingresses', agentIngress);
export type AgentIngressList = z.infer<typeof agentIngressList>;
