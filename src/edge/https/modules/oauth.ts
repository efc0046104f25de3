import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import { AUTH_PATH_PREFIX, createOAuthModule } from './auth/index.js';
import { authOptions, signInHooks } from './auth/sign-in-hooks.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

/** `oauth`: sign-in with one of the API's OAuth providers (authorization code with PKCE). */
export const oauthModule: EdgeRouteModule<ModuleConfig<'oauth'>> = {
  schema: ROUTE_MODULE_SCHEMAS.oauth.input,
  // One sign-in per route: with both on, OIDC signs in.
  supersededBy: 'oidc',
  reservedPathPrefix: AUTH_PATH_PREFIX,
  compile: (config, context) => signInHooks(createOAuthModule(config, authOptions(context))),
};
