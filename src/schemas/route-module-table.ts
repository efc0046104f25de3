import type { z } from 'zod';
import {
  backendModule,
  backendModuleInput,
  ipRestrictionModule,
  ipRestrictionModuleInput,
  policyModule,
  policyModuleInput,
} from './edge-modules.js';
import {
  circuitBreakerModule,
  circuitBreakerModuleInput,
  compressionModule,
  compressionModuleInput,
  oauthModule,
  oauthModuleInput,
  oidcModule,
  oidcModuleInput,
  requestHeadersModule,
  requestHeadersModuleInput,
  responseHeadersModule,
  responseHeadersModuleInput,
  samlModule,
  samlModuleInput,
  userAgentFilterModule,
  userAgentFilterModuleInput,
  webhookVerificationModule,
  webhookVerificationModuleInput,
  websocketTcpConverterModule,
  websocketTcpConverterModuleInput,
} from './route-modules.js';

/**
 * Every module of an HTTPS edge route, in the order the read form lists them: its request (PUT)
 * and read schemas. The one list of route modules: the route's read and write schemas, the
 * client's module methods and, keyed by these names and type-checked complete against them, the
 * server's module table (server/edge-resources/route-module-kinds.ts), the CRD fields
 * (operator/crds/route-module-fields.ts) and the controller's adapters
 * (operator/controllers/https-edge-route/route-module-adapters.ts).
 */
export const ROUTE_MODULE_SCHEMAS = {
  backend: { input: backendModuleInput, output: backendModule },
  ip_restriction: { input: ipRestrictionModuleInput, output: ipRestrictionModule },
  circuit_breaker: { input: circuitBreakerModuleInput, output: circuitBreakerModule },
  compression: { input: compressionModuleInput, output: compressionModule },
  request_headers: { input: requestHeadersModuleInput, output: requestHeadersModule },
  response_headers: { input: responseHeadersModuleInput, output: responseHeadersModule },
  webhook_verification: { input: webhookVerificationModuleInput, output: webhookVerificationModule },
  oauth: { input: oauthModuleInput, output: oauthModule },
  saml: { input: samlModuleInput, output: samlModule },
  oidc: { input: oidcModuleInput, output: oidcModule },
  websocket_tcp_converter: { input: websocketTcpConverterModuleInput, output: websocketTcpConverterModule },
  user_agent_filter: { input: userAgentFilterModuleInput, output: userAgentFilterModule },
  policy: { input: policyModuleInput, output: policyModule },
} as const;

type Table = typeof ROUTE_MODULE_SCHEMAS;
export type RouteModuleName = keyof Table;
export const ROUTE_MODULE_NAMES = Object.keys(ROUTE_MODULE_SCHEMAS) as RouteModuleName[];

/** The module fields of the route's read form: each module or null. */
export type RouteModuleReadFields = { [K in RouteModuleName]: z.ZodNullable<Table[K]['output']> };
/** The module fields of a route create or update: each optional, null meaning unset. */
export type RouteModuleInputFields = {
  [K in RouteModuleName]: z.ZodOptional<z.ZodNullable<Table[K]['input']>>;
};
/** A module's `[request, read form]` types, as the client's module methods take and return them. */
export type RouteModuleTypes = {
  [K in RouteModuleName]: [z.input<Table[K]['input']>, z.output<Table[K]['output']>];
};

export function routeModuleReadFields(): RouteModuleReadFields {
  return Object.fromEntries(
    ROUTE_MODULE_NAMES.map((name) => [name, ROUTE_MODULE_SCHEMAS[name].output.nullable()]),
  ) as unknown as RouteModuleReadFields;
}

export function routeModuleInputFields(): RouteModuleInputFields {
  return Object.fromEntries(
    ROUTE_MODULE_NAMES.map((name) => [name, ROUTE_MODULE_SCHEMAS[name].input.nullable().optional()]),
  ) as unknown as RouteModuleInputFields;
}
