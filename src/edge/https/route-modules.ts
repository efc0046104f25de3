import type { EdgeHttpsRoute } from '../../schemas/edge-config.js';
import { ROUTE_MODULE_NAMES, type RouteModuleName } from '../../schemas/route-module-table.js';
import type { RequestExchange, ResponseExchange } from './exchange.js';
import type { HeaderRecord } from './forwarding-headers.js';
import { EDGE_ROUTE_MODULES } from './modules/index.js';
import type {
  ActiveRouteModule,
  EdgeRouteModule,
  ModuleVerdict,
  RouteModuleContext,
  UpgradeExchange,
} from './modules/route-module.js';

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

/** The table's rows in its order: the order modules act in. */
const ROWS = Object.entries(EDGE_ROUTE_MODULES) as [RouteModuleName, EdgeRouteModule<{ enabled: boolean }>][];

/** The prefixes of the paths modules serve themselves (`/_edgeward/auth/`, `/saml/`). */
export const RESERVED_PATH_PREFIXES: readonly string[] = [
  ...new Set(ROWS.flatMap(([, row]) => (row.reservedPathPrefix ? [row.reservedPathPrefix] : []))),
];

/**
 * A route's modules, compiled: the hooks of those that are on, in the table's order. Stateful
 * modules (the circuit breaker, the policy's rate limiters) live here: a configuration that leaves
 * the route's modules unchanged keeps the same object (see `HttpsRouteTable`).
 */
export class RouteModules {
  readonly #active: readonly { name: RouteModuleName; hooks: ActiveRouteModule }[];
  readonly #onRequest: NonNullable<ActiveRouteModule['onRequest']>[];
  readonly #onResponse: ActiveRouteModule[];
  /** The tunnel group the route sends to, when its backend names one the configuration has. */
  readonly tunnelGroup: Readonly<Record<string, string>> | undefined;

  constructor(active: readonly { name: RouteModuleName; hooks: ActiveRouteModule }[]) {
    this.#active = active;
    this.#onRequest = active.flatMap(({ hooks }) => (hooks.onRequest ? [hooks.onRequest.bind(hooks)] : []));
    this.#onResponse = active.flatMap(({ hooks }) => (hooks.onResponse ? [hooks] : []));
    this.tunnelGroup = active.find(({ hooks }) => hooks.tunnelGroup)?.hooks.tunnelGroup;
  }

  /** Every module's `onRequest` in order; the first reply answers instead of the upstream. */
  async onRequest(exchange: RequestExchange): Promise<ModuleVerdict> {
    for (const onRequest of this.#onRequest) {
      const pending = onRequest(exchange);
      // Most hooks answer at once: a microtask per module per request is not worth paying.
      const verdict = isPromiseLike(pending) ? await pending : pending;
      if (verdict) return verdict;
    }
    return undefined;
  }

  /** The modules that guard the route's reserved paths (the IP restriction), in order. */
  async guardReservedPath(exchange: RequestExchange): Promise<ModuleVerdict> {
    for (const { hooks } of this.#active) {
      if (!hooks.guardsReservedPaths || !hooks.onRequest) continue;
      const verdict = await hooks.onRequest(exchange);
      if (verdict) return verdict;
    }
    return undefined;
  }

  /** The module on this route that serves paths under `prefix`, if one does. */
  reservedPathServer(prefix: string): ActiveRouteModule | undefined {
    return this.#active.find(
      ({ name, hooks }) => hooks.serveReservedPath && EDGE_ROUTE_MODULES[name].reservedPathPrefix === prefix,
    )?.hooks;
  }

  onUpstreamResult(result: number | 'error'): void {
    for (const { hooks } of this.#active) hooks.onUpstreamResult?.(result);
  }

  /** Every module's `onResponse` in order; a reply replaces the upstream's answer. */
  onResponse(exchange: ResponseExchange): ModuleVerdict {
    for (const hooks of this.#onResponse) {
      const verdict = hooks.onResponse?.(exchange);
      if (verdict) return verdict;
    }
    return undefined;
  }

  onUpgradeResponse(headers: HeaderRecord): HeaderRecord {
    let result = headers;
    for (const { hooks } of this.#active)
      if (hooks.onUpgradeResponse) result = hooks.onUpgradeResponse(result);
    return result;
  }

  /** Lets a module take over an admitted upgrade's connection; true when one did. */
  onUpgrade(upgrade: UpgradeExchange): boolean {
    return this.#active.some(({ hooks }) => hooks.onUpgrade?.(upgrade) === true);
  }
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | undefined)?.then === 'function';
}

/** Reads one module's configuration; undefined when it is unset or disabled. */
function readConfig(name: RouteModuleName, row: EdgeRouteModule<{ enabled: boolean }>, value: unknown) {
  if (value === undefined || value === null) return undefined;
  const result = row.schema.safeParse(value);
  if (!result.success) {
    throw new RouteModuleError(
      name,
      `unreadable configuration (${result.error.issues[0]?.message ?? 'invalid'})`,
    );
  }
  return result.data.enabled ? result.data : undefined;
}

/** Compiles every module of `route`; throws a RouteModuleError for the first one it cannot read. */
export function compileRouteModules(
  route: EdgeHttpsRoute,
  context: Omit<RouteModuleContext, 'routeId'>,
): RouteModules {
  const unknown = Object.keys(route.modules).filter(
    (name) => !(ROUTE_MODULE_NAMES as string[]).includes(name),
  );
  if (unknown.length > 0) throw new RouteModuleError(unknown[0] ?? '', 'a module this edge does not know');
  const modules = route.modules as Partial<Record<RouteModuleName, unknown>>;
  const configs = new Map(ROWS.map(([name, row]) => [name, readConfig(name, row, modules[name])] as const));
  const active: { name: RouteModuleName; hooks: ActiveRouteModule }[] = [];
  for (const [name, row] of ROWS) {
    const config = configs.get(name);
    if (config && !(row.supersededBy && configs.get(row.supersededBy))) {
      try {
        active.push({ name, hooks: row.compile(config, { ...context, routeId: route.id }) });
      } catch (error) {
        if (error instanceof RouteModuleError) throw error;
        throw new RouteModuleError(name, error instanceof Error ? error.message : String(error), {
          cause: error,
        });
      }
    } else if (row.whenOff) {
      active.push({ name, hooks: row.whenOff });
    }
  }
  return new RouteModules(active);
}
