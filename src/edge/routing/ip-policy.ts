import { BlockList, isIPv4 } from 'node:net';
import type { EdgeConfig } from '../../schemas/edge-config.js';

type IpPolicy = EdgeConfig['ip_policies'][number];

/** A compiled `ip_restriction`: the rules of every policy it names, as two block lists. */
export interface IpRestriction {
  allows(ip: string): boolean;
}

export const ALLOW_ALL: IpRestriction = { allows: () => true };

function blockList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address = '', prefix = ''] = cidr.split('/');
    list.addSubnet(address, Number(prefix), isIPv4(address) ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** `::ffff:192.0.2.1` is 192.0.2.1 for rules written in IPv4. */
export function normalizeIp(ip: string): string {
  return ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
}

/**
 * The restriction of the policies named (a deleted policy is one with no rules, as the spec says).
 * A deny rule that matches refuses; otherwise, when any allow rule exists, one must match;
 * policies with no rules at all allow everyone.
 */
export function compileIpRestriction(
  policyIds: readonly string[],
  policies: readonly IpPolicy[],
): IpRestriction {
  const rules = policyIds.flatMap((id) => policies.find((policy) => policy.id === id)?.rules ?? []);
  const allow = rules.filter((rule) => rule.action === 'allow').map((rule) => rule.cidr);
  const deny = rules.filter((rule) => rule.action === 'deny').map((rule) => rule.cidr);
  if (allow.length === 0 && deny.length === 0) return ALLOW_ALL;
  const allowList = blockList(allow);
  const denyList = blockList(deny);
  return {
    allows(rawIp: string): boolean {
      const ip = normalizeIp(rawIp);
      const family = isIPv4(ip) ? 'ipv4' : 'ipv6';
      if (denyList.check(ip, family)) return false;
      return allow.length === 0 || allowList.check(ip, family);
    },
  };
}
