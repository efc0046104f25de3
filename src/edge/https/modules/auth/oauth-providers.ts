import { z } from 'zod';
import { githubProfile } from './github.js';
import { type ProviderApi, parseApi } from './provider-api.js';
import type { OAuthEndpoints, ProviderName } from './types.js';

/** The signed-in user as a provider describes them. */
export interface ProviderProfile {
  subject: string;
  /** Only an address the provider vouches belongs to the user (verified, or the sign-in name). */
  email?: string;
  name?: string;
}

export interface OAuthProviderSpec {
  endpoints: OAuthEndpoints;
  /** Always requested (what `profile` needs); the route's own scopes are added. */
  scopes: readonly string[];
  profile(api: ProviderApi, endpoints: OAuthEndpoints, clientId: string): Promise<ProviderProfile>;
}

const text = z.string().nullish();

/** Providers whose user API is an OpenID Connect userinfo endpoint. */
const oidcUserinfo = z.object({ sub: z.string(), email: text, email_verified: z.unknown(), name: text });
async function userinfoProfile(api: ProviderApi, endpoints: OAuthEndpoints): Promise<ProviderProfile> {
  const user = parseApi(oidcUserinfo, (await api.get('userinfo', endpoints.userinfoUrl)).body, 'userinfo');
  const verified = user.email_verified === true || user.email_verified === 'true';
  return {
    subject: user.sub,
    email: verified ? (user.email ?? undefined) : undefined,
    name: user.name ?? undefined,
  };
}

const microsoftUser = z.object({ id: z.string(), displayName: text, userPrincipalName: text });
const facebookUser = z.object({ id: z.string(), name: text, email: text });
const gitlabUser = z.object({ id: z.number(), username: z.string(), name: text, email: text });
const twitchUsers = z.object({
  data: z.array(z.object({ id: z.string(), login: z.string(), display_name: text, email: text })).min(1),
});
const amazonUser = z.object({ user_id: z.string(), name: text, email: text });

const FACEBOOK_GRAPH = 'v21.0';

/**
 * The providers' real endpoints and how each names the user. Every token request authenticates
 * with client_secret_post (all eight accept it; GitHub accepts nothing else). Any of them may be
 * overridden per route (`oauthEndpoints`): tests, self-hosted GitLab or GitHub Enterprise.
 */
export const OAUTH_PROVIDERS: Record<ProviderName, OAuthProviderSpec> = {
  github: {
    endpoints: {
      authorizationUrl: 'https://github.com/login/oauth/authorize',
      tokenUrl: 'https://github.com/login/oauth/access_token',
      userinfoUrl: 'https://api.github.com/user',
    },
    scopes: ['read:user', 'user:email'],
    profile: (api, endpoints) => githubProfile(api, endpoints.userinfoUrl),
  },
  google: {
    endpoints: {
      authorizationUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
      tokenUrl: 'https://oauth2.googleapis.com/token',
      userinfoUrl: 'https://openidconnect.googleapis.com/v1/userinfo',
    },
    scopes: ['openid', 'email', 'profile'],
    profile: userinfoProfile,
  },
  microsoft: {
    endpoints: {
      authorizationUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
      tokenUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
      userinfoUrl: 'https://graph.microsoft.com/v1.0/me',
    },
    scopes: ['User.Read'],
    async profile(api, endpoints) {
      const user = parseApi(microsoftUser, (await api.get('user', endpoints.userinfoUrl)).body, 'user');
      // Not `mail`: any tenant's admin may set it to anything. The user principal name is in one of
      // the tenant's verified domains (a personal account's is its sign-in address); a guest's
      // `#EXT#` name is no address.
      const upn = user.userPrincipalName ?? '';
      const email = upn.includes('@') && !upn.includes('#EXT#') ? upn : undefined;
      return { subject: user.id, email, name: user.displayName ?? undefined };
    },
  },
  facebook: {
    endpoints: {
      authorizationUrl: `https://www.facebook.com/${FACEBOOK_GRAPH}/dialog/oauth`,
      tokenUrl: `https://graph.facebook.com/${FACEBOOK_GRAPH}/oauth/access_token`,
      userinfoUrl: `https://graph.facebook.com/${FACEBOOK_GRAPH}/me?fields=id,name,email`,
    },
    scopes: ['public_profile', 'email'],
    async profile(api, endpoints) {
      // Facebook returns an email only once the user has confirmed it.
      const user = parseApi(facebookUser, (await api.get('user', endpoints.userinfoUrl)).body, 'user');
      return { subject: user.id, email: user.email ?? undefined, name: user.name ?? undefined };
    },
  },
  linkedin: {
    endpoints: {
      authorizationUrl: 'https://www.linkedin.com/oauth/v2/authorization',
      tokenUrl: 'https://www.linkedin.com/oauth/v2/accessToken',
      userinfoUrl: 'https://api.linkedin.com/v2/userinfo',
    },
    scopes: ['openid', 'profile', 'email'],
    profile: userinfoProfile,
  },
  gitlab: {
    endpoints: {
      authorizationUrl: 'https://gitlab.com/oauth/authorize',
      tokenUrl: 'https://gitlab.com/oauth/token',
      userinfoUrl: 'https://gitlab.com/api/v4/user',
    },
    scopes: ['read_user'],
    async profile(api, endpoints) {
      // `email` is the primary address, which GitLab lets users choose only among confirmed ones.
      const user = parseApi(gitlabUser, (await api.get('user', endpoints.userinfoUrl)).body, 'user');
      return { subject: String(user.id), email: user.email ?? undefined, name: user.name ?? user.username };
    },
  },
  twitch: {
    endpoints: {
      authorizationUrl: 'https://id.twitch.tv/oauth2/authorize',
      tokenUrl: 'https://id.twitch.tv/oauth2/token',
      userinfoUrl: 'https://api.twitch.tv/helix/users',
    },
    scopes: ['user:read:email'],
    async profile(api, endpoints, clientId) {
      // Helix wants the app's id besides the token; its `email` is the verified address.
      const page = await api.get('user', endpoints.userinfoUrl, { 'client-id': clientId });
      const user = parseApi(twitchUsers, page.body, 'user').data[0]!;
      return {
        subject: user.id,
        email: user.email ?? undefined,
        name: user.display_name ?? user.login,
      };
    },
  },
  amazon: {
    endpoints: {
      authorizationUrl: 'https://www.amazon.com/ap/oa',
      tokenUrl: 'https://api.amazon.com/auth/o2/token',
      userinfoUrl: 'https://api.amazon.com/user/profile',
    },
    scopes: ['profile'],
    async profile(api, endpoints) {
      const user = parseApi(amazonUser, (await api.get('user', endpoints.userinfoUrl)).body, 'user');
      return { subject: user.user_id, email: user.email ?? undefined, name: user.name ?? undefined };
    },
  },
};
