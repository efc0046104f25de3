import type { z } from 'zod';
import type { RouteModuleName } from '../../schemas/route-module-table.js';
import { backendModule, ipRestrictionModule, policyModule } from './modules.js';
import {
  circuitBreakerModule,
  compressionModule,
  oauthModule,
  oidcModule,
  requestHeadersModule,
  responseHeadersModule,
  samlModule,
  userAgentFilterModule,
  webhookVerificationModule,
  websocketTcpConverterModule,
} from './route-modules.js';

/**
 * Each route module as an HTTPSEdgeRoute spells it: its camelCase spec field and CRD schema, keyed
 * by the API's module name (schemas/route-module-table.ts) and checked complete against it.
 */
export const ROUTE_MODULE_FIELDS = {
  backend: { field: 'backend', schema: backendModule },
  ip_restriction: { field: 'ipRestriction', schema: ipRestrictionModule },
  circuit_breaker: { field: 'circuitBreaker', schema: circuitBreakerModule },
  compression: { field: 'compression', schema: compressionModule },
  request_headers: { field: 'requestHeaders', schema: requestHeadersModule },
  response_headers: { field: 'responseHeaders', schema: responseHeadersModule },
  webhook_verification: { field: 'webhookVerification', schema: webhookVerificationModule },
  oauth: { field: 'oauth', schema: oauthModule },
  saml: { field: 'saml', schema: samlModule },
  oidc: { field: 'oidc', schema: oidcModule },
  websocket_tcp_converter: { field: 'websocketTcpConverter', schema: websocketTcpConverterModule },
  user_agent_filter: { field: 'userAgentFilter', schema: userAgentFilterModule },
  policy: { field: 'policy', schema: policyModule },
} as const satisfies Record<RouteModuleName, { field: string; schema: z.ZodType }>;

type Fields = typeof ROUTE_MODULE_FIELDS;
export type RouteModuleSpecField = Fields[RouteModuleName]['field'];

/** The modules' spec fields of an HTTPSEdgeRoute, each optional. */
export type RouteModuleSpecFields = {
  [K in RouteModuleName as Fields[K]['field']]: z.ZodOptional<Fields[K]['schema']>;
};

export function routeModuleSpecFields(): RouteModuleSpecFields {
  return Object.fromEntries(
    Object.values(ROUTE_MODULE_FIELDS).map(({ field, schema }) => [field, schema.optional()]),
  ) as unknown as RouteModuleSpecFields;
}
