/**
 * The HTTPS edge's `oidc` and `oauth` route modules: the edge runs the authorization-code flow
 * itself and passes the signed-in identity upstream. See README.md in this folder.
 */
export { AUTH_PATH_PREFIX } from './auth-module.js';
export { createOAuthModule } from './oauth.js';
export { OAUTH_PROVIDERS } from './oauth-providers.js';
export { createOidcModule } from './oidc.js';
export type {
  AuthIdentity,
  AuthLogEvent,
  AuthModule,
  AuthModuleOptions,
  AuthRequest,
  AuthVerdict,
  OAuthEndpoints,
  ProviderName,
} from './types.js';
