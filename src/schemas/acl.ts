import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * ACL rules of tunnel and SSH credentials. The spec allows only `*` and `bind:<target>`, where the
 * target is a domain (optionally with a leading `*.` wildcard), an address (`host:port`) or a
 * label (`key=value`, either side may be `*`).
 *
 * The spec gives no limits on the number or length of rules; these caps keep a credential row
 * bounded and are far above any realistic ACL.
 */
export const ACL_MAX_RULES = 100;
export const ACL_RULE_MAX_BYTES = 255;

const WRONG_KIND = "only 'bind:<domain|address|label>' rules and '*' are allowed";
const BAD_TARGET =
  "the bind target must be a domain (a wildcard only as a leading '*.'), a host:port address or a key=value label";

const DNS_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const LABEL_PART = /^[A-Za-z0-9_.-]+$/;
const PORT = /^[1-9][0-9]{0,4}$/;

function isDomain(name: string): boolean {
  if (name.length > 253) return false;
  return name.split('.').every((label) => DNS_LABEL.test(label));
}

function isWildcardDomain(target: string): boolean {
  return target.startsWith('*.') ? isDomain(target.slice(2)) : isDomain(target);
}

/** `key=value`, where the key and/or the value may be `*`. */
function isLabel(target: string): boolean {
  const equals = target.indexOf('=');
  if (equals < 0) return false;
  const key = target.slice(0, equals);
  const value = target.slice(equals + 1);
  const ok = (part: string) => part === '*' || LABEL_PART.test(part);
  return ok(key) && ok(value);
}

/** `host:port` or `[ipv6]:port`, port 1..65535; an address names one listener, so no wildcard. */
function isAddress(target: string): boolean {
  const colon = target.lastIndexOf(':');
  if (colon < 0) return false;
  const host = target.slice(0, colon);
  const port = target.slice(colon + 1);
  if (!PORT.test(port) || Number(port) > 65535) return false;
  if (host.startsWith('[') && host.endsWith(']')) return isIP(host.slice(1, -1)) === 6;
  return isIP(host) === 4 || isDomain(host);
}

/** Why an ACL rule is invalid, or undefined when it is valid. */
export function aclRuleProblem(rule: string): string | undefined {
  if (Buffer.byteLength(rule, 'utf8') > ACL_RULE_MAX_BYTES) {
    return `must be at most ${ACL_RULE_MAX_BYTES} bytes`;
  }
  if (rule === '*') return undefined;
  if (!rule.startsWith('bind:')) return `'${rule}' is not a valid rule; ${WRONG_KIND}`;
  const target = rule.slice('bind:'.length);
  if (target === '') return `'${rule}' is not a valid rule; the bind target is empty`;
  if (target.includes('=')) {
    return isLabel(target) ? undefined : `'${rule}' is not a valid rule; ${BAD_TARGET}`;
  }
  if (target.includes(':')) {
    return isAddress(target) ? undefined : `'${rule}' is not a valid rule; ${BAD_TARGET}`;
  }
  return isWildcardDomain(target) ? undefined : `'${rule}' is not a valid rule; ${BAD_TARGET}`;
}

export const aclRule = z
  .string()
  .superRefine((rule, ctx) => {
    const problem = aclRuleProblem(rule);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  // JSON Schema cannot say all of aclRuleProblem; the format names it for tools (and the fuzzer).
  .meta({ format: 'edgeward-acl-rule', pattern: '^(\\*|bind:.+)$' });

/** Unspecified means `[]`: no restrictions (rule 1 of the spec); `*` says the same explicitly. */
export const acl = z.array(aclRule).max(ACL_MAX_RULES, `must have at most ${ACL_MAX_RULES} rules`).meta({
  description: "ACL rules: '*' or 'bind:<domain|*.domain|host:port|key=value>'; empty means no restrictions",
});
export type Acl = z.infer<typeof acl>;
