import type { RouteModuleName } from '../../../schemas/route-module-table.js';
import type { HttpsEdgeRouteSpec } from '../../crds/definitions/https-edge-route.js';
import { ROUTE_MODULE_FIELDS } from '../../crds/route-module-fields.js';
import { backendAdapter, ipRestrictionAdapter, policyAdapter } from '../shared/edges/edge-modules.js';
import {
  circuitBreakerAdapter,
  enabledOnlyAdapter,
  headersAdapter,
  oauthAdapter,
  oidcAdapter,
  type RouteModuleAdapter,
  samlAdapter,
  userAgentFilterAdapter,
  webhookVerificationAdapter,
} from './route-modules.js';

/**
 * How each route module's spec field becomes its API form, keyed by the API's module name and
 * checked complete against it. (Adapters of different modules fit `RouteModuleAdapter<unknown,
 * unknown>` because method parameters are bivariant.)
 */
const ADAPTERS: Record<RouteModuleName, RouteModuleAdapter<unknown, unknown>> = {
  backend: backendAdapter,
  ip_restriction: ipRestrictionAdapter,
  circuit_breaker: circuitBreakerAdapter,
  compression: enabledOnlyAdapter,
  request_headers: headersAdapter,
  response_headers: headersAdapter,
  webhook_verification: webhookVerificationAdapter,
  oauth: oauthAdapter,
  saml: samlAdapter,
  oidc: oidcAdapter,
  websocket_tcp_converter: enabledOnlyAdapter,
  user_agent_filter: userAgentFilterAdapter,
  policy: policyAdapter,
};

export interface RouteModuleEntry {
  adapter: RouteModuleAdapter<unknown, unknown>;
  specOf: (spec: HttpsEdgeRouteSpec) => unknown;
}

/** API module name -> its adapter and spec field, in the API's order. */
export const ROUTE_MODULES = Object.fromEntries(
  Object.entries(ROUTE_MODULE_FIELDS).map(([name, { field }]) => [
    name,
    {
      adapter: ADAPTERS[name as RouteModuleName],
      specOf: (spec: HttpsEdgeRouteSpec) => (spec as Record<string, unknown>)[field],
    },
  ]),
) as Record<RouteModuleName, RouteModuleEntry>;

/** The module a spec field belongs to (`oauth` -> oauth, `webhookVerification` -> webhook_verification). */
export const MODULE_OF_SPEC_FIELD: Readonly<Record<string, RouteModuleName>> = Object.fromEntries(
  Object.entries(ROUTE_MODULE_FIELDS).map(([name, { field }]) => [field, name as RouteModuleName]),
);
