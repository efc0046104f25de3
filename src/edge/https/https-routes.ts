import { createHash } from 'node:crypto';
import { bestMatch, hostOf, nameMatches } from '../../lib/tls-names.js';
import type { EdgeConfig, EdgeHttpsEdge, EdgeHttpsRoute } from '../../schemas/edge-config.js';
import type { TlsVersion } from '../listeners/tls-listener.js';
import type { RouteModuleContext } from './modules/route-module.js';
import { compileRouteModules, type RouteModules } from './route-modules.js';

/** One route, matched by its selector; `modules` undefined means its configuration is unreadable. */
export interface HttpsRoute {
  id: string;
  edgeId: string;
  matchType: 'exact_path' | 'path_prefix';
  /** The selector's host, when it names one (`api.example.com/v1`), lower case. */
  host: string | undefined;
  /** The selector's path; `/` for a host-only selector. */
  path: string;
  modules: RouteModules | undefined;
  /** Why `modules` is undefined: said in logs and metrics, never to clients. */
  problem: string | undefined;
}

export interface HttpsEdgeEntry {
  edge: EdgeHttpsEdge;
  names: string[];
  minVersion: TlsVersion;
  /** Present = mutual TLS: client certificates must chain to one of these (PEM). */
  clientCas: string[] | undefined;
  routes: HttpsRoute[];
}

/** The selector split into host and path: `/x` is a path, `h` a host, `h/x` both. */
function selector(match: string): { host: string | undefined; path: string } {
  if (match.startsWith('/')) return { host: undefined, path: match };
  const slash = match.indexOf('/');
  if (slash === -1) return { host: match.toLowerCase(), path: '/' };
  return { host: match.slice(0, slash).toLowerCase(), path: match.slice(slash) };
}

function routeMatches(route: HttpsRoute, host: string, path: string): boolean {
  if (route.host !== undefined && !nameMatches(route.host, host)) return false;
  return route.matchType === 'exact_path' ? path === route.path : path.startsWith(route.path);
}

/**
 * Orders candidate routes: an exact path before a prefix, then the longest path, then a route that
 * names the host before one that does not. The first matching route in this order serves.
 */
function precedence(a: HttpsRoute, b: HttpsRoute): number {
  if (a.matchType !== b.matchType) return a.matchType === 'exact_path' ? -1 : 1;
  if (a.path.length !== b.path.length) return b.path.length - a.path.length;
  return (b.host === undefined ? 0 : 1) - (a.host === undefined ? 0 : 1);
}

/**
 * The HTTPS edges of the configuration: which edge serves a host name (exact names before
 * wildcards, as for TLS edges) and which of its routes serves a request. Routes are compiled
 * once per distinct content: a configuration that leaves a route unchanged keeps its modules, and
 * so its circuit breaker and rate-limit counters.
 */
export class HttpsRouteTable {
  #edges: HttpsEdgeEntry[] = [];
  #compiled = new Map<string, HttpsRoute>();
  #byId = new Map<string, HttpsRoute>();

  constructor(private readonly onProblem: (route: HttpsRoute) => void) {}

  apply(config: EdgeConfig, context: Omit<RouteModuleContext, 'config' | 'routeId'>): void {
    const compiled = new Map<string, HttpsRoute>();
    // The compiled modules depend on the route and on what it references elsewhere in the feed.
    const referenced = JSON.stringify([config.backends, config.ip_policies]);
    this.#edges = config.https_edges.map((edge) => ({
      edge,
      names: edge.hostports.map(hostOf),
      minVersion:
        edge.tls_termination?.enabled === false ? '1.2' : (edge.tls_termination?.min_version ?? '1.2'),
      clientCas:
        edge.mutual_tls?.enabled === true
          ? edge.mutual_tls.certificate_authority_ids.flatMap(
              (id) => config.certificate_authorities.find((ca) => ca.id === id)?.ca_pem ?? [],
            )
          : undefined,
      routes: edge.routes
        .map((route) => {
          const key = createHash('sha256')
            .update(JSON.stringify([edge.id, route, referenced]))
            .digest('base64url');
          const route_ = this.#compiled.get(key) ?? this.#compile(edge.id, route, { ...context, config });
          compiled.set(key, route_);
          return route_;
        })
        .sort(precedence),
    }));
    this.#compiled = compiled;
    this.#byId = new Map([...compiled.values()].map((route) => [route.id, route]));
  }

  #compile(edgeId: string, route: EdgeHttpsRoute, context: Omit<RouteModuleContext, 'routeId'>): HttpsRoute {
    const { host, path } = selector(route.match);
    const entry: HttpsRoute = {
      id: route.id,
      edgeId,
      matchType: route.match_type,
      host,
      path,
      modules: undefined,
      problem: undefined,
    };
    try {
      entry.modules = compileRouteModules(route, context);
    } catch (error) {
      entry.problem = error instanceof Error ? error.message : String(error);
      this.onProblem(entry);
    }
    return entry;
  }

  /** Why a route of the current configuration cannot serve, if it cannot. */
  problemOf(routeId: string): string | undefined {
    return this.#byId.get(routeId)?.problem;
  }

  /** The tunnel group a route of the current configuration sends to, if any. */
  routeLabels(routeId: string): Record<string, string> | undefined {
    return this.#byId.get(routeId)?.modules?.tunnelGroup;
  }

  edgeFor(host: string): HttpsEdgeEntry | undefined {
    return bestMatch(this.#edges, (entry) => entry.names, host);
  }

  routeFor(entry: HttpsEdgeEntry, host: string, path: string): HttpsRoute | undefined {
    return entry.routes.find((route) => routeMatches(route, host, path));
  }

  routeById(entry: HttpsEdgeEntry, routeId: string): HttpsRoute | undefined {
    return entry.routes.find((route) => route.id === routeId);
  }
}
