import {
  ClientSecretBasic,
  ClientSecretPost,
  Configuration,
  customFetch,
  discovery,
  fetchUserInfo,
} from 'openid-client';
import type { OidcModuleInput } from '../../../../schemas/route-modules.js';
import { SESSION_DEFAULTS } from '../../../../schemas/route-modules.js';
import { createAuthModule } from './auth-module.js';
import { cached } from './cached.js';
import { IDP_TIMEOUT_SECONDS, idpFetch } from './idp-fetch.js';
import { cleanIdentity, type IdentityProtocol, sameSubject } from './protocol.js';
import type { AuthModule, AuthModuleOptions } from './types.js';

/** Discovery documents change rarely; a day keeps key and endpoint changes from going unnoticed. */
const DISCOVERY_TTL_MS = 24 * 60 * 60 * 1000;

/** Requested with openid when the route names no scopes: enough for the email and name headers. */
const DEFAULT_SCOPES = ['email', 'profile'];

const claimText = (value: unknown) => (typeof value === 'string' ? value : undefined);

/** `openid`, then the route's scopes (or email and profile), each once. */
export function oidcScope(scopes: readonly string[]): string {
  const rest = scopes.length > 0 ? scopes : DEFAULT_SCOPES;
  return [...new Set(['openid', ...rest])].join(' ');
}

function oidcProtocol(config: OidcModuleInput, options: AuthModuleOptions): IdentityProtocol {
  const fetchImpl = idpFetch(options.ca);
  const configuration = cached(async () => {
    const discovered = await discovery(new URL(config.issuer), config.client_id, undefined, undefined, {
      [customFetch]: fetchImpl,
      timeout: IDP_TIMEOUT_SECONDS,
    });
    const server = discovered.serverMetadata();
    // client_secret_basic is the OpenID default when the provider lists no methods.
    const methods = server.token_endpoint_auth_methods_supported;
    const auth =
      !methods || methods.includes('client_secret_basic')
        ? ClientSecretBasic(config.client_secret)
        : ClientSecretPost(config.client_secret);
    const client = new Configuration({ ...server }, config.client_id, undefined, auth);
    client[customFetch] = fetchImpl;
    client.timeout = IDP_TIMEOUT_SECONDS;
    return client;
  }, DISCOVERY_TTL_MS);

  return {
    binding: `oidc\n${config.issuer}\n${config.client_id}`,
    idToken: true,
    scope: oidcScope(config.scopes),
    configuration,
    authorizationResponse: (callback) => callback,
    async identify(client, tokens, previous) {
      const claims: Record<string, unknown> = tokens.idClaims ? { ...tokens.idClaims } : {};
      if (tokens.idClaims) sameSubject(previous, tokens.idClaims.sub);
      const subject = tokens.idClaims?.sub ?? previous?.subject;
      if (!subject) throw new Error('the identity provider returned no ID token');
      const hasUserinfo = client.serverMetadata().userinfo_endpoint !== undefined;
      if (hasUserinfo && tokens.accessToken) {
        // Code-flow ID tokens often carry only `sub`; email and name are in userinfo.
        Object.assign(claims, await fetchUserInfo(client, tokens.accessToken, subject));
      } else if (!tokens.idClaims) {
        if (!tokens.refreshed || !previous)
          throw new Error('the identity provider offers nothing to check with');
        // A refresh grant the IdP honoured is the confirmation; nothing new about the user.
        return { ok: true, identity: previous };
      }
      // An address the provider says is unverified is not passed on; most omit the claim.
      const email = claims.email_verified === false ? undefined : claimText(claims.email);
      const name = claimText(claims.name) ?? claimText(claims.preferred_username);
      return { ok: true, identity: cleanIdentity({ subject, email, name }) };
    },
  };
}

/**
 * The `oidc` route module: OpenID Connect sign-in at the issuer the route names (discovered from
 * its `.well-known/openid-configuration`). OIDC routes have no email lists: whoever the issuer
 * signs in may pass. The session is checked with the issuer hourly, as OAuth's default.
 */
export function createOidcModule(config: OidcModuleInput, options: AuthModuleOptions): AuthModule {
  return createAuthModule(
    oidcProtocol(config, options),
    {
      cookiePrefix: config.cookie_prefix,
      optionsPassthrough: config.options_passthrough,
      limits: {
        inactivityTimeout: config.inactivity_timeout,
        maximumDuration: config.maximum_duration,
        checkInterval: SESSION_DEFAULTS.auth_check_interval,
      },
    },
    options,
  );
}
