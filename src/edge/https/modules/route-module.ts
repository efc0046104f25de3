import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { z } from 'zod';
import type { EdgeConfig } from '../../../schemas/edge-config.js';
import type { ROUTE_MODULE_SCHEMAS, RouteModuleName } from '../../../schemas/route-module-table.js';
import type { EdgeReply, RequestExchange, ResponseExchange } from '../exchange.js';
import type { HeaderRecord } from '../forwarding-headers.js';
import type { CircuitBreakerState } from './circuit-breaker.js';

/**
 * The contract of a route module at the edge. Each module is one file exporting one
 * `EdgeRouteModule`, listed once in `EDGE_ROUTE_MODULES` (`./index.ts`), a table keyed by every
 * module name of the API, so a module the API knows and the edge forgets is a type error. The
 * table's order is the order modules act in.
 *
 * `compile` turns a route's configuration into the module's hooks, bound to what it compiled (a
 * circuit breaker's counters, a policy's rate limiters): closures rather than a state argument, so
 * the table needs no existential type. The request path calls only the hooks a module has.
 */
export interface EdgeRouteModule<Config extends { enabled: boolean }> {
  /** Reads the configuration as the feed carries it; failing, the route refuses every request. */
  readonly schema: z.ZodType<Config>;
  /** When this module and the named one are both on, this one steps aside (OAuth for OIDC). */
  readonly supersededBy?: RouteModuleName;
  /** Paths `<prefix><route id>/…` the module serves itself on every route of the edge. */
  readonly reservedPathPrefix?: string;
  /** What the route does when this module is off (a route without a backend refuses). */
  readonly whenOff?: ActiveRouteModule;
  /** Builds the module for one route (only when it is on); throws on a configuration it cannot run. */
  compile(config: Config, context: RouteModuleContext): ActiveRouteModule;
}

/** A module's verdict on a request or a response: nothing to let it pass, or the edge's answer. */
export type ModuleVerdict = EdgeReply | undefined;

/** One module compiled for one route: the hooks it takes part with. */
export interface ActiveRouteModule {
  /** Before the request goes upstream, in table order; the first reply answers instead. */
  onRequest?(exchange: RequestExchange): ModuleVerdict | Promise<ModuleVerdict>;
  /** What became of the request upstream: its status, or `'error'` when none came. */
  onUpstreamResult?(result: number | 'error'): void;
  /** The upstream's answer before it is relayed, in table order; a reply replaces it. */
  onResponse?(exchange: ResponseExchange): ModuleVerdict;
  /** The upstream's answer to an upgrade request (a `101`, or a refusal relayed as it is). */
  onUpgradeResponse?(headers: HeaderRecord): HeaderRecord;
  /** Takes over an admitted upgrade's connection instead of relaying it; true when it did. */
  onUpgrade?(upgrade: UpgradeExchange): boolean;
  /** Serves a path under the module's `reservedPathPrefix`; undefined lets routing go on. */
  serveReservedPath?(request: ReservedPathRequest): ModuleVerdict | Promise<ModuleVerdict>;
  /** Its `onRequest` guards the reserved paths of the route too (the IP restriction). */
  guardsReservedPaths?: boolean;
  /** The tunnel group the route sends to (the backend). */
  tunnelGroup?: Readonly<Record<string, string>>;
}

/** An upgrade request admitted by every module, with the agent's stream already open. */
export interface UpgradeExchange {
  request: IncomingMessage;
  socket: Duplex;
  head: Buffer;
  stream: Duplex;
}

/** A request for a path the module serves itself. */
export interface ReservedPathRequest {
  exchange: RequestExchange;
  /** The path after `<prefix><route id>`. */
  rest: string;
  routeId: string;
}

/** What the edge needs from its process to build a route's modules. */
export interface RouteModuleContext {
  config: EdgeConfig;
  routeId: string;
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

/** A module's configuration as the API writes it. */
export type ModuleConfig<K extends RouteModuleName> = z.output<(typeof ROUTE_MODULE_SCHEMAS)[K]['input']>;

/** Every module of the API, each with its edge half: a missing row does not compile. */
export type EdgeRouteModuleTable = { readonly [K in RouteModuleName]: EdgeRouteModule<ModuleConfig<K>> };
