import { z } from 'zod';
import {
  AGENT_INGRESS_DOMAIN_MAX_CHARS,
  agentIngressCertAuthorities,
  agentIngressPrivateKeyTypes,
} from '../../../schemas/agent-ingresses.js';
import { immutable, withRules } from '../cel.js';
import { describedSpecFields, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';

export const agentIngressSpec = withRules(
  z.object({
    ...describedSpecFields,
    domain: z
      .string()
      .min(1)
      .max(AGENT_INGRESS_DOMAIN_MAX_CHARS)
      .regex(/^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/)
      .meta({ description: 'a domain you own, base of the regional agent ingress domains; immutable' }),
    certificateManagementPolicy: z
      .object({
        authority: z
          .enum(agentIngressCertAuthorities)
          .optional()
          .meta({ description: 'certificate authority; letsencrypt (the only one, and the default)' }),
        privateKeyType: z
          .enum(agentIngressPrivateKeyTypes)
          .optional()
          .meta({ description: 'type of the private key: rsa (default) or ecdsa' }),
      })
      .optional()
      .meta({ description: 'automatic TLS certificate management; absent disables it' }),
  }),
  immutable('domain', 'the regional domains and NS targets derive from it'),
);
export type AgentIngressSpec = z.output<typeof agentIngressSpec>;

const timestamp = z.string().meta({ format: 'date-time' });

export const agentIngressStatus = z.object({
  ...statusFields,
  nsTargets: z
    .array(z.string())
    .optional()
    .meta({ description: 'NS records to set for the domain, delegating it to the service' }),
  regionDomains: z
    .array(z.string())
    .optional()
    .meta({ description: 'regional agent ingress domains, tunnel.<region>.<domain>' }),
  certificateManagementStatus: z
    .object({
      renewsAt: timestamp.optional().meta({ description: 'time of the next renewal request' }),
      provisioningJob: z
        .object({
          errorCode: z
            .string()
            .optional()
            .meta({ description: 'INTERNAL_ERROR (temporary) or DNS_ERROR (the user must correct)' }),
          msg: z.string().optional(),
          startedAt: timestamp.optional(),
          retriesAt: timestamp.optional(),
        })
        .optional()
        .meta({ description: 'the certificate being provisioned or renewed; absent otherwise' }),
    })
    .optional(),
});
export type AgentIngressStatus = z.output<typeof agentIngressStatus>;

export const agentIngressKind = defineKind({
  kind: 'AgentIngress',
  plural: 'agentingresses',
  shortNames: ['agin'],
  description:
    'AgentIngress is a custom base domain that tunnel agents connect to, with optional automatic TLS certificate management.',
  spec: agentIngressSpec,
  status: agentIngressStatus,
  printerColumns: [
    { name: 'Domain', type: 'string', jsonPath: '.spec.domain' },
    {
      name: 'Certificate',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="CertificateReady")].reason',
      description: 'the CertificateReady reason: Issued, Provisioning, Retrying or DnsError',
    },
  ],
});
