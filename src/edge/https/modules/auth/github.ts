import { z } from 'zod';
import type { ProviderProfile } from './oauth-providers.js';
import { allPages, type ProviderApi, parseApi } from './provider-api.js';

/**
 * GitHub's REST API around `/user`. The other resources hang below the user resource
 * (`/user/emails`, `/user/orgs`, `/user/teams`), so an Enterprise Server's `/api/v3/user`, or a
 * test's, brings its own.
 */
const HEADERS = { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };

const user = z.object({ id: z.number(), login: z.string(), name: z.string().nullish() });
const emails = z.array(z.object({ email: z.string(), primary: z.boolean(), verified: z.boolean() }));
const orgs = z.array(z.object({ login: z.string() }));
const teams = z.array(z.object({ slug: z.string(), organization: z.object({ login: z.string() }) }));

/** `/user` says who; the email is the primary address, and only once verified (`/user/emails`). */
export async function githubProfile(api: ProviderApi, userUrl: string): Promise<ProviderProfile> {
  const account = parseApi(user, (await api.get('user', userUrl, HEADERS)).body, 'user');
  const addresses = parseApi(
    emails,
    await allPages(api, 'emails', `${userUrl}/emails?per_page=100`, HEADERS),
    'emails',
  );
  const primary = addresses.find((address) => address.primary && address.verified);
  return { subject: String(account.id), email: primary?.email, name: account.name ?? account.login };
}

export interface GithubMemberships {
  /** Lower-case organization logins. */
  organizations: Set<string>;
  /** Lower-case `org/team-slug`. */
  teams: Set<string>;
}

/** Needs the `read:org` scope: without it GitHub lists only public memberships. */
export async function githubMemberships(api: ProviderApi, userUrl: string): Promise<GithubMemberships> {
  const [orgList, teamList] = await Promise.all([
    allPages(api, 'orgs', `${userUrl}/orgs?per_page=100`, HEADERS),
    allPages(api, 'teams', `${userUrl}/teams?per_page=100`, HEADERS),
  ]);
  return {
    organizations: new Set(parseApi(orgs, orgList, 'orgs').map((org) => org.login.toLowerCase())),
    teams: new Set(
      parseApi(teams, teamList, 'teams').map((team) =>
        `${team.organization.login}/${team.slug}`.toLowerCase(),
      ),
    ),
  };
}
