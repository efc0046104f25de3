import { z } from 'zod';
import { tlsMinVersions } from '../../schemas/edge-modules.js';
import {
  TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES,
  TUNNEL_GROUP_MAX_LABELS,
} from '../../schemas/tunnel-group-backends.js';
import { exactlyOne, withRules } from './cel.js';
import { localRefs, serverId, serverIds } from './common.js';

/**
 * Edge modules shared by TLSEdge, HTTPSEdge, TCPEdge and HTTPSEdgeRoute, in the form a custom
 * resource spells them: camelCase, other resources by name (`ipPolicyRefs`) or by raw server id
 * (`ipPolicyIds`), never both. An absent module is not configured.
 */

export const moduleEnabled = z
  .boolean()
  .default(true)
  .meta({ description: 'true (default) applies the module' });

/**
 * Where traffic goes: tunnel sessions carrying all of `labels` (the operator keeps a tunnel-group
 * backend for them) or an existing backend by id.
 */
export const backendModule = withRules(
  z.object({
    enabled: moduleEnabled,
    labels: z.record(z.string(), z.string().max(TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES)).optional().meta({
      description:
        'tunnel sessions carrying all of these labels serve the traffic; the operator keeps a tunnel-group backend for them',
      minProperties: 1,
      maxProperties: TUNNEL_GROUP_MAX_LABELS,
    }),
    backendId: serverId('bkdtg', 'an existing tunnel-group backend').optional(),
  }),
  exactlyOne('labels', 'backendId'),
);

export const ipRestrictionModule = withRules(
  z.object({
    enabled: moduleEnabled,
    ipPolicyRefs: localRefs('IPPolicy').optional(),
    ipPolicyIds: serverIds('ipp', 'IP policy').optional(),
  }),
  exactlyOne('ipPolicyRefs', 'ipPolicyIds'),
);

export const mutualTlsModule = withRules(
  z.object({
    enabled: moduleEnabled,
    certificateAuthorityRefs: localRefs('CertificateAuthority').optional(),
    certificateAuthorityIds: serverIds('ca', 'certificate authority').optional(),
  }),
  exactlyOne('certificateAuthorityRefs', 'certificateAuthorityIds'),
);

const minVersion = z
  .enum(tlsMinVersions)
  .optional()
  .meta({ description: 'minimum TLS version; the server picks a safe default (1.2) when unset' });

/** TLS edges may pass TLS through to the agent (`upstream`), and then have no minimum version. */
export const tlsTerminationModule = withRules(
  z.object({
    enabled: moduleEnabled,
    terminateAt: z.enum(['edge', 'upstream']).default('edge').meta({
      description: 'edge (default) terminates TLS at the edge; upstream passes it through to the agent',
    }),
    minVersion,
  }),
  {
    rule: "!(has(self.terminateAt) && self.terminateAt == 'upstream' && has(self.minVersion))",
    message: 'minVersion must be unset when terminateAt is upstream',
    fieldPath: '.minVersion',
  },
);

/** HTTPS edges always terminate TLS at the edge (routing needs the request), so only the version is set. */
export const tlsTerminationAtEdgeModule = z.object({ enabled: moduleEnabled, minVersion });

const policyAction = z.object({
  type: z
    .string()
    .max(64)
    .regex(/^[a-z][a-z0-9-]*$/)
    .meta({ description: "action type, e.g. 'deny', 'log', 'url-rewrite' or 'custom-response'" }),
  config: z.record(z.string(), z.unknown()).optional().meta({
    description: 'configuration of the action, as its type defines it',
    'x-kubernetes-preserve-unknown-fields': true,
  }),
});

const policyRule = z.object({
  name: z.string().min(1).max(255),
  expressions: z
    .array(z.string().min(1).max(4096))
    .max(100)
    .optional()
    .meta({ description: 'CEL expressions selecting the traffic the rule applies to' }),
  actions: z.array(policyAction).min(1).max(100),
});

export const policyModule = z.object({
  enabled: moduleEnabled,
  inbound: z.array(policyRule).max(1000).optional().meta({ description: 'rules applied to inbound traffic' }),
  outbound: z
    .array(policyRule)
    .max(1000)
    .optional()
    .meta({ description: 'rules applied to outbound traffic' }),
});

/** `host:port` served by a TLS or HTTPS edge (RE2 has no lookahead, so the total length is maxLength). */
export const hostports = z
  .array(
    z
      .string()
      .max(259)
      .regex(
        /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?:[1-9][0-9]{0,4}$/,
      )
      .meta({ description: "'<lowercase host>:<port>', e.g. 'app.example.com:443'" }),
  )
  .max(100)
  .optional()
  .meta({ description: 'host:port pairs served by the edge', 'x-kubernetes-list-type': 'set' });

export type BackendModule = z.output<typeof backendModule>;
export type IpRestrictionModule = z.output<typeof ipRestrictionModule>;
export type MutualTlsModule = z.output<typeof mutualTlsModule>;
export type TlsTerminationModule = z.output<typeof tlsTerminationModule>;
export type TlsTerminationAtEdgeModule = z.output<typeof tlsTerminationAtEdgeModule>;
export type PolicyModule = z.output<typeof policyModule>;
