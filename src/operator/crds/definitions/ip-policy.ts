import { z } from 'zod';
import { ipPolicyAction } from '../../../schemas/ip-policies.js';
import { withRules } from '../cel.js';
import { describedSpecFields, description, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';

/** The server keeps rules as their own resources; the operator keeps them equal to this list. */
const ipPolicyRule = withRules(
  z.object({
    cidr: z
      .string()
      .min(1)
      .max(64)
      .meta({ description: 'the source network, e.g. 203.0.113.0/24 or 2001:db8::/32' }),
    action: ipPolicyAction.meta({ description: 'allow or deny traffic from the network' }),
    description: description.optional(),
  }),
  {
    rule: 'isCIDR(self.cidr)',
    message: 'cidr must be an IP network in CIDR notation, e.g. 203.0.113.0/24 or 2001:db8::/32',
    fieldPath: '.cidr',
  },
  {
    rule: '!isCIDR(self.cidr) || cidr(self.cidr) == cidr(self.cidr).masked()',
    message: 'cidr must be a network address, without host bits set (e.g. 10.0.0.0/8, not 10.1.2.3/8)',
    fieldPath: '.cidr',
  },
);

export const ipPolicySpec = z.object({
  ...describedSpecFields,
  rules: z
    .array(ipPolicyRule)
    .max(1000)
    .optional()
    .meta({
      description: 'the rules of the policy, one per network',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['cidr'],
    }),
});
export type IpPolicySpec = z.output<typeof ipPolicySpec>;

export const ipPolicyStatus = z.object({
  ...statusFields,
  rules: z
    .array(
      z.object({
        id: z.string().meta({ description: 'server id of the rule (ipr_...)' }),
        cidr: z.string(),
        action: z.string().optional(),
      }),
    )
    .optional()
    .meta({ description: 'the rules on the server' }),
});
export type IpPolicyStatus = z.output<typeof ipPolicyStatus>;

export const ipPolicyKind = defineKind({
  kind: 'IPPolicy',
  plural: 'ippolicies',
  shortNames: ['ipp'],
  description:
    'IPPolicy is a named set of allow and deny rules for source networks, used by edge IP restrictions.',
  spec: ipPolicySpec,
  status: ipPolicyStatus,
});
