import { isIP } from 'node:net';
import { z } from 'zod';
import {
  describedInputFields,
  describedResourceFields,
  idParams,
  listOf,
  ref,
  resourceId,
} from './common.js';

export const ipPolicy = z
  .object({
    ...describedResourceFields,
  })
  .meta({ id: 'IPPolicy' });
export type IpPolicy = z.infer<typeof ipPolicy>;

export const ipPolicyCreate = z.strictObject(describedInputFields);
export type IpPolicyCreate = z.input<typeof ipPolicyCreate>;
export const ipPolicyUpdate = ipPolicyCreate;
export type IpPolicyUpdate = z.input<typeof ipPolicyUpdate>;
export const ipPolicyList = listOf('ip_policies', ipPolicy);
export type IpPolicyList = z.infer<typeof ipPolicyList>;

/** Why a CIDR is bad, or undefined when it is a canonical `address/prefix`. */
export function cidrProblem(cidr: string): string | undefined {
  const slash = cidr.indexOf('/');
  if (slash < 0) return 'must be in CIDR notation, e.g. 203.0.113.0/24 or 2001:db8::/32';
  const address = cidr.slice(0, slash);
  const prefixText = cidr.slice(slash + 1);
  if (address.includes('%'))
    return 'must not have a zone index (%...): policies match addresses, not interfaces';
  const family = isIP(address);
  if (family === 0) return `'${address}' is not an IPv4 or IPv6 address`;
  const maxPrefix = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > maxPrefix) {
    return `prefix length must be 0..${maxPrefix}`;
  }
  const prefix = Number(prefixText);
  const bits = addressBits(address, family);
  const hostBits = maxPrefix - prefix;
  if (hostBits > 0 && (bits & ((1n << BigInt(hostBits)) - 1n)) !== 0n) {
    return `has host bits set after /${prefix}; use the network address`;
  }
  return undefined;
}

function addressBits(address: string, family: number): bigint {
  if (family === 4) return address.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(octet), 0n);
  const [head = '', tail = ''] = address.includes('::') ? address.split('::') : [address, ''];
  const parse = (part: string) => (part === '' ? [] : part.split(':'));
  let headGroups = parse(head);
  let tailGroups = parse(tail);
  // An embedded IPv4 tail (::ffff:1.2.3.4) counts as two groups.
  const expandV4 = (groups: string[]) => {
    const last = groups.at(-1);
    if (last?.includes('.')) {
      const v4 = addressBits(last, 4);
      return [...groups.slice(0, -1), (v4 >> 16n).toString(16), (v4 & 0xffffn).toString(16)];
    }
    return groups;
  };
  if (address.includes('::')) tailGroups = expandV4(tailGroups);
  else headGroups = expandV4(headGroups);
  const zeros = Array(8 - headGroups.length - tailGroups.length).fill('0');
  return [...headGroups, ...zeros, ...tailGroups].reduce(
    (acc, group) => (acc << 16n) | BigInt(`0x${group}`),
    0n,
  );
}

export const cidr = z
  .string()
  .superRefine((value, ctx) => {
    const problem = cidrProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  // A network address and prefix with no host bits set: more than a pattern can say.
  .meta({ format: 'cidr' });

export const ipPolicyAction = z.enum(['allow', 'deny']);

export const ipPolicyRule = z
  .object({
    ...describedResourceFields,
    cidr: z.string(),
    ip_policy: ref,
    action: ipPolicyAction,
  })
  .meta({ id: 'IPPolicyRule' });
export type IpPolicyRule = z.infer<typeof ipPolicyRule>;

export const ipPolicyRuleCreate = z.strictObject({
  ...describedInputFields,
  cidr,
  ip_policy_id: resourceId('ipp'),
  action: ipPolicyAction,
});
export type IpPolicyRuleCreate = z.input<typeof ipPolicyRuleCreate>;
export const ipPolicyRuleUpdate = z.strictObject({
  ...describedInputFields,
  cidr: cidr.optional(),
  action: ipPolicyAction.optional(),
});
export type IpPolicyRuleUpdate = z.input<typeof ipPolicyRuleUpdate>;
export const ipPolicyRuleList = listOf('ip_policy_rules', ipPolicyRule);
export type IpPolicyRuleList = z.infer<typeof ipPolicyRuleList>;

export { idParams };
