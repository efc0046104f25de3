import { describe, expect, it } from 'vitest';
import { decideAccess, emailMatches, rulesDigest } from './access-rules.js';

const none = { emailAddresses: [], emailDomains: [], organizations: [], teams: [] };
const profile = { subject: '1', email: 'Alice@Example.com' };

describe('OAuth access rules', () => {
  it('lets anyone in without rules, even without an email', () => {
    expect(decideAccess(none, { subject: '1' })).toEqual({ ok: true });
  });

  it('matches addresses and exact domains, case-insensitively', () => {
    expect(emailMatches({ ...none, emailAddresses: ['alice@example.COM'] }, profile.email)).toBe(true);
    expect(emailMatches({ ...none, emailDomains: ['EXAMPLE.com'] }, profile.email)).toBe(true);
    expect(emailMatches({ ...none, emailDomains: ['mail.example.com', 'ample.com'] }, profile.email)).toBe(
      false,
    );
    expect(emailMatches({ ...none, emailDomains: ['example.com'] }, 'x@mail.example.com')).toBe(false);
    expect(emailMatches({ ...none, emailDomains: ['example.com'] }, undefined)).toBe(false);
  });

  it('lets in on any one match: email, organization or team', () => {
    const rules = {
      ...none,
      emailAddresses: ['bob@example.com'],
      organizations: ['Acme'],
      teams: ['acme/Platform'],
    };
    const memberships = (organizations: string[], teams: string[]) => ({
      organizations: new Set(organizations),
      teams: new Set(teams),
    });
    expect(decideAccess(rules, profile).ok).toBe(false);
    expect(decideAccess(rules, profile, memberships(['acme'], [])).ok).toBe(true);
    expect(decideAccess(rules, profile, memberships([], ['acme/platform'])).ok).toBe(true);
    expect(decideAccess(rules, profile, memberships(['other'], ['acme/sales']))).toEqual({
      ok: false,
      reason: 'not an allowed email, organization or team',
    });
  });

  it('digests the same rules the same way whatever their order and case', () => {
    const a = rulesDigest({ ...none, emailDomains: ['b.com', 'A.com'] });
    expect(rulesDigest({ ...none, emailDomains: ['a.com', 'b.com'] })).toBe(a);
    expect(rulesDigest({ ...none, emailAddresses: ['a.com', 'b.com'] })).not.toBe(a);
  });
});
