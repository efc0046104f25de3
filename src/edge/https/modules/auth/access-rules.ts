import { createHash } from 'node:crypto';
import type { GithubMemberships } from './github.js';
import type { ProviderProfile } from './oauth-providers.js';

/** Who may pass an OAuth route. Empty lists throughout: anyone the provider signs in. */
export interface AccessRules {
  emailAddresses: readonly string[];
  emailDomains: readonly string[];
  /** GitHub only: organization logins, and `org/team-slug`. */
  organizations: readonly string[];
  teams: readonly string[];
}

export type AccessDecision = { ok: true } | { ok: false; reason: string };

export const hasRules = (rules: AccessRules) =>
  rules.emailAddresses.length + rules.emailDomains.length + rules.organizations.length + rules.teams.length >
  0;

export const needsMemberships = (rules: AccessRules) => rules.organizations.length + rules.teams.length > 0;

/** A digest of the rules, part of the session cookie's context: changed rules end old sessions. */
export function rulesDigest(rules: AccessRules): string {
  const normal = (list: readonly string[]) => [...list].map((item) => item.toLowerCase()).sort();
  const canonical = JSON.stringify([
    normal(rules.emailAddresses),
    normal(rules.emailDomains),
    normal(rules.organizations),
    normal(rules.teams),
  ]);
  return createHash('sha256').update(canonical).digest('base64url');
}

/** Matched by the verified email alone: the address itself, or its domain exactly (no subdomains). */
export function emailMatches(rules: AccessRules, email: string | undefined): boolean {
  if (!email) return false;
  const address = email.toLowerCase();
  const domain = address.slice(address.lastIndexOf('@') + 1);
  return (
    rules.emailAddresses.some((allowed) => allowed.toLowerCase() === address) ||
    rules.emailDomains.some((allowed) => allowed.toLowerCase() === domain)
  );
}

/** Any one listed address, domain, organization or team lets the user in. */
export function decideAccess(
  rules: AccessRules,
  profile: ProviderProfile,
  memberships?: GithubMemberships,
): AccessDecision {
  if (!hasRules(rules) || emailMatches(rules, profile.email)) return { ok: true };
  if (memberships) {
    if (rules.organizations.some((org) => memberships.organizations.has(org.toLowerCase())))
      return { ok: true };
    if (rules.teams.some((team) => memberships.teams.has(team.toLowerCase()))) return { ok: true };
  }
  const reason = profile.email
    ? 'not an allowed email, organization or team'
    : 'no verified email, organization or team';
  return { ok: false, reason };
}
