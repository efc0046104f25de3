import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import { AUTH_PATH_PREFIX, createOidcModule } from './auth/index.js';
import { authOptions, signInHooks } from './auth/sign-in-hooks.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

/** `oidc`: sign-in with an OpenID provider (discovery, authorization code with PKCE, ID token). */
export const oidcModule: EdgeRouteModule<ModuleConfig<'oidc'>> = {
  schema: ROUTE_MODULE_SCHEMAS.oidc.input,
  reservedPathPrefix: AUTH_PATH_PREFIX,
  compile: (config, context) => signInHooks(createOidcModule(config, authOptions(context))),
};
