import { backendModule } from './backend.js';
import { circuitBreakerModule } from './circuit-breaker.js';
import { compressionModule } from './compression.js';
import { ipRestrictionModule } from './ip-restriction.js';
import { oauthModule } from './oauth.js';
import { oidcModule } from './oidc.js';
import { policyModule } from './policy.js';
import { requestHeadersModule } from './request-headers.js';
import { responseHeadersModule } from './response-headers.js';
import type { EdgeRouteModuleTable } from './route-module.js';
import { samlModule } from './saml.js';
import { userAgentFilterModule } from './user-agent-filter.js';
import { webhookVerificationModule } from './webhook-verification/route-module.js';
import { websocketTcpConverterModule } from './websocket-tcp-converter.js';

/**
 * Every route module at the edge, in the order they act: on a request from the first row down
 * (the first refusal answers), on the upstream's answer the same way. Typed against the API's list
 * of modules, so a module the API has and this table lacks is a compile error.
 *
 * request:  ip_restriction → saml → user_agent_filter → policy (inbound) → oauth / oidc →
 *           webhook_verification → circuit_breaker → request_headers → backend →
 *           websocket_tcp_converter → the agent
 * response: policy (outbound) → response_headers → compression
 */
export const EDGE_ROUTE_MODULES: EdgeRouteModuleTable = {
  ip_restriction: ipRestrictionModule,
  saml: samlModule,
  user_agent_filter: userAgentFilterModule,
  policy: policyModule,
  oauth: oauthModule,
  oidc: oidcModule,
  webhook_verification: webhookVerificationModule,
  circuit_breaker: circuitBreakerModule,
  request_headers: requestHeadersModule,
  backend: backendModule,
  websocket_tcp_converter: websocketTcpConverterModule,
  response_headers: responseHeadersModule,
  compression: compressionModule,
};
