import { z } from 'zod';
import { describedInputFields, listOf, modulesInUpdate, timestamp } from './common.js';
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

export const routeMatchTypes = ['exact_path', 'path_prefix'] as const;

/** `exact_path` or `path_prefix`; a missing one says so rather than listing the values. */
const routeMatchType = z.enum(routeMatchTypes, {
  error: (issue) => (issue.input === undefined ? 'is required' : undefined),
});

export const MAX_ROUTE_MATCH_BYTES = 1024;

/**
 * The route selector: a path (`/api`), a host (`api.example.com`) or a host plus path
 * (`api.example.com/v1`). Checked only for what would make it unusable in a request line.
 */
export const routeMatch = z
  .string()
  .min(1, 'must not be empty')
  .refine(
    (s) => Buffer.byteLength(s, 'utf8') <= MAX_ROUTE_MATCH_BYTES,
    `must be at most ${MAX_ROUTE_MATCH_BYTES} bytes`,
  )
  .refine((s) => !/[\s\p{Cc}]/u.test(s), 'must not contain whitespace or control characters')
  .meta({
    description: "a path starting with '/', a host, or a host plus path",
    pattern: '^[^\\s\\x00-\\x1f\\x7f-\\x9f\\ufeff]+$',
  });

export const httpsEdgeRoute = z
  .object({
    edge_id: z.string(),
    id: z.string(),
    created_at: timestamp,
    uri: z.string(),
    description: z.string(),
    metadata: z.string(),
    match_type: z.enum(routeMatchTypes),
    match: z.string(),
    backend: backendModule.nullable(),
    ip_restriction: ipRestrictionModule.nullable(),
    circuit_breaker: circuitBreakerModule.nullable(),
    compression: compressionModule.nullable(),
    request_headers: requestHeadersModule.nullable(),
    response_headers: responseHeadersModule.nullable(),
    webhook_verification: webhookVerificationModule.nullable(),
    oauth: oauthModule.nullable(),
    saml: samlModule.nullable(),
    oidc: oidcModule.nullable(),
    websocket_tcp_converter: websocketTcpConverterModule.nullable(),
    user_agent_filter: userAgentFilterModule.nullable(),
    policy: policyModule.nullable(),
  })
  .meta({ id: 'HTTPSEdgeRoute' });
export type HttpsEdgeRoute = z.infer<typeof httpsEdgeRoute>;

const routeModuleFields = {
  backend: backendModuleInput.nullable().optional(),
  ip_restriction: ipRestrictionModuleInput.nullable().optional(),
  circuit_breaker: circuitBreakerModuleInput.nullable().optional(),
  compression: compressionModuleInput.nullable().optional(),
  request_headers: requestHeadersModuleInput.nullable().optional(),
  response_headers: responseHeadersModuleInput.nullable().optional(),
  webhook_verification: webhookVerificationModuleInput.nullable().optional(),
  oauth: oauthModuleInput.nullable().optional(),
  saml: samlModuleInput.nullable().optional(),
  oidc: oidcModuleInput.nullable().optional(),
  websocket_tcp_converter: websocketTcpConverterModuleInput.nullable().optional(),
  user_agent_filter: userAgentFilterModuleInput.nullable().optional(),
  policy: policyModuleInput.nullable().optional(),
};

export const httpsEdgeRouteCreate = z.strictObject({
  ...describedInputFields,
  match_type: routeMatchType,
  match: routeMatch,
  ...routeModuleFields,
});
export type HttpsEdgeRouteCreate = z.input<typeof httpsEdgeRouteCreate>;

/** As for edges: an absent module is unchanged, a present one replaces the old, null is refused. */
export const httpsEdgeRouteUpdate = z.strictObject({
  ...describedInputFields,
  match_type: routeMatchType.optional(),
  match: routeMatch.optional(),
  ...modulesInUpdate(routeModuleFields),
});
export type HttpsEdgeRouteUpdate = z.input<typeof httpsEdgeRouteUpdate>;

export const httpsEdgeRouteList = listOf('routes', httpsEdgeRoute);
export type HttpsEdgeRouteList = z.infer<typeof httpsEdgeRouteList>;

/** Path parameters of one route: `/edges/https/{edge_id}/routes/{id}`. */
export const httpsEdgeRouteParams = z.strictObject({ edge_id: z.string().min(1), id: z.string().min(1) });
export const httpsEdgeRoutesParams = z.strictObject({ edge_id: z.string().min(1) });
