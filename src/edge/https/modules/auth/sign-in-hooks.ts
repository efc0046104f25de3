import { headerSafe } from '../../forwarding-headers.js';
import type { ActiveRouteModule, ModuleVerdict, RouteModuleContext } from '../route-module.js';
import type { AuthModule, AuthModuleOptions, AuthVerdict } from './types.js';

/** The options every sign-in module of a route is built with. */
export function authOptions(context: RouteModuleContext): AuthModuleOptions {
  return {
    routeId: context.routeId,
    cookieKey: context.cookieKey,
    ...(context.identityProviderCas && { ca: context.identityProviderCas }),
    log: context.log,
  };
}

function answer(verdict: Extract<AuthVerdict, { kind: 'respond' }>): ModuleVerdict {
  return { status: verdict.status, headers: verdict.headers, body: verdict.body, outcome: 'auth' };
}

/**
 * How `oauth` and `oidc` take part in a request: a request without a session is sent to sign in
 * (or refused); a signed-in one goes on with who signed in told to the service, and a refreshed
 * session's cookie added to the answer. Their callback and logout paths are served by the edge.
 */
export function signInHooks(auth: AuthModule): ActiveRouteModule {
  return {
    async onRequest(exchange) {
      const verdict = await auth.handle({
        method: exchange.request.method,
        url: exchange.href,
        headers: exchange.request.headers,
      });
      if (verdict.kind === 'respond') return answer(verdict);
      exchange.setCookies.push(...verdict.setCookies);
      if (verdict.identity) {
        const { headers } = exchange;
        headers['edgeward-auth-user-id'] = headerSafe(verdict.identity.subject);
        if (verdict.identity.email) headers['edgeward-auth-user-email'] = headerSafe(verdict.identity.email);
        if (verdict.identity.name) headers['edgeward-auth-user-name'] = headerSafe(verdict.identity.name);
      }
      return undefined;
    },
    async serveReservedPath({ exchange }) {
      const verdict = await auth.handle({
        method: exchange.request.method,
        url: exchange.href,
        headers: exchange.request.headers,
      });
      return verdict.kind === 'respond' ? answer(verdict) : undefined;
    },
  };
}
