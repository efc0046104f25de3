import { z } from 'zod';
import type { EdgeConfig, EdgeHttpsRoute } from '../../schemas/edge-config.js';
import { ROUTE_MODULE_SCHEMAS, type RouteModuleName } from '../../schemas/route-module-table.js';
import { samlModuleInput } from '../../schemas/route-modules.js';
import { type CompiledPolicy, compilePolicy } from '../../traffic-policy/index.js';
import { compileIpRestriction, type IpRestriction } from '../routing/ip-policy.js';
import { type AuthModule, createOAuthModule, createOidcModule } from './modules/auth/index.js';
import { CircuitBreaker, type CircuitBreakerState } from './modules/circuit-breaker.js';
import { compileHeaderRules, type HeaderRules } from './modules/header-rules.js';
import { compileUserAgentFilter } from './modules/user-agent-filter.js';
import { createWebhookVerifier, type WebhookVerifier } from './modules/webhook-verification/index.js';

/** What the edge needs from its process to build a route's modules. */
export interface RouteModuleContext {
  config: EdgeConfig;
  /** Seals session cookies of oauth and oidc; the same on every edge process. */
  cookieKey: Buffer;
  /** Extra CA certificates (PEM) trusted for calls to identity providers. */
  identityProviderCas?: string[];
  log(event: {
    level: 'info' | 'warn';
    message: string;
    routeId: string;
    detail?: Record<string, unknown>;
  }): void;
  /** A route's circuit breaker changed state (for metrics). */
  onCircuitBreakerState?(routeId: string, state: CircuitBreakerState): void;
}

/** The SP side of SAML as the feed carries it: the module plus the certificate it publishes. */
const edgeSamlModule = samlModuleInput.extend({ request_signing_certificate_pem: z.string() });
export type EdgeSamlModule = z.output<typeof edgeSamlModule>;

/**
 * A route's modules, compiled. Every field is undefined when its module is unset or disabled, so
 * the request path checks each with one comparison. Stateful modules (the circuit breaker, the
 * policy's rate limiters) live here: a configuration that leaves the route's modules unchanged
 * keeps the same object (see `HttpsRouteTable`).
 */
export interface RouteModules {
  backendLabels: Record<string, string> | undefined;
  /** Set but naming a backend the configuration does not have: 503, never another backend. */
  ipRestriction: IpRestriction | undefined;
  circuitBreaker: CircuitBreaker | undefined;
  compression: boolean;
  requestHeaders: HeaderRules | undefined;
  responseHeaders: HeaderRules | undefined;
  webhookVerification: WebhookVerifier | undefined;
  auth: AuthModule | undefined;
  saml: EdgeSamlModule | undefined;
  websocketTcpConverter: boolean;
  userAgentFilter: ((userAgent: string | undefined) => boolean) | undefined;
  policy: CompiledPolicy | undefined;
}

/** A module the edge could not read: the route answers 503 until a configuration fixes it. */
export class RouteModuleError extends Error {
  constructor(
    readonly module: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`${module}: ${message}`, options);
  }
}

/** Parses one module with the API's own write schema; undefined when it is unset or disabled. */
function parsed<K extends RouteModuleName>(route: EdgeHttpsRoute, name: K) {
  const value = route.modules[name];
  if (value === undefined || value === null) return undefined;
  const result = ROUTE_MODULE_SCHEMAS[name].input.safeParse(value);
  if (!result.success) {
    throw new RouteModuleError(
      name,
      `unreadable configuration (${result.error.issues[0]?.message ?? 'invalid'})`,
    );
  }
  const module = result.data as z.output<(typeof ROUTE_MODULE_SCHEMAS)[K]['input']>;
  return module.enabled ? module : undefined;
}

/** Builds `name` with `build`, turning any failure into a RouteModuleError naming the module. */
function built<T>(name: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof RouteModuleError) throw error;
    throw new RouteModuleError(name, error instanceof Error ? error.message : String(error), {
      cause: error,
    });
  }
}

/** Compiles every module of `route`; throws a RouteModuleError for the first one it cannot read. */
export function compileRouteModules(route: EdgeHttpsRoute, context: RouteModuleContext): RouteModules {
  const { config } = context;
  const unknown = Object.keys(route.modules).filter((name) => !(name in ROUTE_MODULE_SCHEMAS));
  if (unknown.length > 0) throw new RouteModuleError(unknown[0] ?? '', 'a module this edge does not know');

  const backend = parsed(route, 'backend');
  const backendLabels = backend
    ? config.backends.find((candidate) => candidate.id === backend.backend_id)?.labels
    : undefined;
  const ipRestriction = parsed(route, 'ip_restriction');
  const circuitBreaker = parsed(route, 'circuit_breaker');
  const requestHeaders = parsed(route, 'request_headers');
  const responseHeaders = parsed(route, 'response_headers');
  const webhook = parsed(route, 'webhook_verification');
  const oauth = parsed(route, 'oauth');
  const oidc = parsed(route, 'oidc');
  const userAgentFilter = parsed(route, 'user_agent_filter');
  const policy = parsed(route, 'policy');
  const samlValue = route.modules.saml;
  let saml: EdgeSamlModule | undefined;
  if (samlValue !== undefined && samlValue !== null) {
    const result = edgeSamlModule.safeParse(samlValue);
    if (!result.success) throw new RouteModuleError('saml', 'unreadable configuration');
    saml = result.data.enabled ? result.data : undefined;
  }
  const authOptions = {
    routeId: route.id,
    cookieKey: context.cookieKey,
    ...(context.identityProviderCas && { ca: context.identityProviderCas }),
    log: context.log,
  };

  return {
    backendLabels,
    ipRestriction: ipRestriction
      ? compileIpRestriction(ipRestriction.ip_policy_ids, config.ip_policies)
      : undefined,
    circuitBreaker: circuitBreaker
      ? built(
          'circuit_breaker',
          () =>
            new CircuitBreaker(circuitBreaker, {
              onStateChange: (state) => context.onCircuitBreakerState?.(route.id, state),
            }),
        )
      : undefined,
    compression: parsed(route, 'compression') !== undefined,
    requestHeaders: requestHeaders
      ? built('request_headers', () => compileHeaderRules(requestHeaders))
      : undefined,
    responseHeaders: responseHeaders
      ? built('response_headers', () => compileHeaderRules(responseHeaders))
      : undefined,
    webhookVerification: webhook
      ? built('webhook_verification', () => createWebhookVerifier(webhook.provider, webhook.secret ?? null))
      : undefined,
    auth: oidc
      ? built('oidc', () => createOidcModule(oidc, authOptions))
      : oauth
        ? built('oauth', () => createOAuthModule(oauth, authOptions))
        : undefined,
    saml,
    websocketTcpConverter: parsed(route, 'websocket_tcp_converter') !== undefined,
    userAgentFilter: userAgentFilter
      ? built('user_agent_filter', () => compileUserAgentFilter(userAgentFilter))
      : undefined,
    policy: policy
      ? built('policy', () =>
          compilePolicy(policy, {
            phase: 'http',
            onError: (error) =>
              context.log({
                level: 'warn',
                message: 'policy expression failed',
                routeId: route.id,
                detail: { error: error.message },
              }),
            onLog: (entry) =>
              context.log({
                level: 'info',
                message: 'policy log action',
                routeId: route.id,
                detail: { ...entry },
              }),
          }),
        )
      : undefined,
  };
}
