import { ClientSecretPost, Configuration, type CustomFetch, customFetch } from 'openid-client';
import {
  type OAuthModuleInput,
  type OAuthProviderName,
  oauthProviderNames,
} from '../../../../schemas/route-modules.js';
import { type AccessRules, decideAccess, needsMemberships, rulesDigest } from './access-rules.js';
import { createAuthModule } from './auth-module.js';
import { githubMemberships } from './github.js';
import { IDP_TIMEOUT_SECONDS, idpFetch } from './idp-fetch.js';
import { OAUTH_PROVIDERS } from './oauth-providers.js';
import { cleanIdentity, type IdentityProtocol, sameSubject } from './protocol.js';
import { providerApi } from './provider-api.js';
import type { AuthModule, AuthModuleOptions, OAuthEndpoints } from './types.js';

type ProviderConfig = NonNullable<OAuthModuleInput['provider'][OAuthProviderName]>;

function chosenProvider(config: OAuthModuleInput): { name: OAuthProviderName; provider: ProviderConfig } {
  for (const name of oauthProviderNames) {
    const provider = config.provider[name];
    if (provider) return { name, provider };
  }
  throw new Error('the oauth module names no provider (the API requires exactly one)');
}

/**
 * These modules identify users by the provider's user API, never by an ID token: one that a
 * provider adds when `openid` is among the scopes would be checked against an issuer the table
 * cannot know (Microsoft's differs per tenant), so it is dropped before openid-client reads it.
 */
export function withoutIdToken(fetchImpl: CustomFetch, tokenUrl: string): CustomFetch {
  const tokenHref = new URL(tokenUrl).href;
  return async (url, options) => {
    const response = await fetchImpl(url, options);
    if (url !== tokenHref || !response.ok) return response;
    const body: unknown = await response.json();
    if (body && typeof body === 'object' && 'id_token' in body) delete body.id_token;
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    return new Response(JSON.stringify(body), { status: response.status, headers });
  };
}

function oauthProtocol(config: OAuthModuleInput, options: AuthModuleOptions): IdentityProtocol {
  const { name, provider } = chosenProvider(config);
  const spec = OAUTH_PROVIDERS[name];
  const endpoints: OAuthEndpoints = options.oauthEndpoints?.[name] ?? spec.endpoints;
  const rules: AccessRules = {
    emailAddresses: provider.email_addresses,
    emailDomains: provider.email_domains,
    organizations: 'organizations' in provider ? provider.organizations : [],
    teams: 'teams' in provider ? provider.teams : [],
  };
  const scopes = [...spec.scopes, ...(needsMemberships(rules) ? ['read:org'] : []), ...provider.scopes];
  const clientId = provider.client_id ?? '';
  const clientSecret = provider.client_secret;
  const client = clientSecret
    ? new Configuration(
        {
          // Only names the server for openid-client; nothing checks it, as no ID token is read.
          issuer: new URL(endpoints.authorizationUrl).origin,
          authorization_endpoint: endpoints.authorizationUrl,
          token_endpoint: endpoints.tokenUrl,
        },
        clientId,
        undefined,
        ClientSecretPost(clientSecret),
      )
    : undefined;
  if (client) {
    client[customFetch] = withoutIdToken(idpFetch(options.ca), endpoints.tokenUrl);
    client.timeout = IDP_TIMEOUT_SECONDS;
  }
  const unusable = `the oauth module has no client_id: the edge has no managed ${name} app`;

  return {
    binding: ['oauth', name, endpoints.authorizationUrl, clientId, rulesDigest(rules)].join('\n'),
    idToken: false,
    scope: [...new Set(scopes)].join(' '),
    ...(client && clientId ? {} : { unusable }),
    async configuration() {
      if (!client || !clientId) throw new Error(unusable);
      return client;
    },
    authorizationResponse(callback) {
      // These providers do not send RFC 9207's `iss`; read only what the flow defines.
      const response = new URL(`${callback.origin}${callback.pathname}`);
      for (const key of ['code', 'state', 'error', 'error_description']) {
        const value = callback.searchParams.get(key);
        if (value !== null) response.searchParams.set(key, value);
      }
      return response;
    },
    async identify(configuration, tokens, previous) {
      if (!tokens.accessToken) throw new Error(`the ${name} token response had no access token`);
      const api = providerApi(configuration, tokens.accessToken);
      const profile = await spec.profile(api, endpoints, clientId);
      sameSubject(previous, profile.subject);
      let decision = decideAccess(rules, profile);
      if (!decision.ok && name === 'github' && needsMemberships(rules)) {
        decision = decideAccess(rules, profile, await githubMemberships(api, endpoints.userinfoUrl));
      }
      if (!decision.ok) return decision;
      return { ok: true, identity: cleanIdentity(profile) };
    },
  };
}

/**
 * The `oauth` route module: sign-in with one of eight OAuth providers (`oauth-providers.ts`), then
 * the route's email addresses, email domains and (GitHub) organizations and teams. The session is
 * checked with the provider every `auth_check_interval` seconds.
 */
export function createOAuthModule(config: OAuthModuleInput, options: AuthModuleOptions): AuthModule {
  return createAuthModule(
    oauthProtocol(config, options),
    {
      cookiePrefix: config.cookie_prefix,
      optionsPassthrough: config.options_passthrough,
      limits: {
        inactivityTimeout: config.inactivity_timeout,
        maximumDuration: config.maximum_duration,
        checkInterval: config.auth_check_interval,
      },
    },
    options,
  );
}
