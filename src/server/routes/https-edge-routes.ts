import type { FastifyInstance } from 'fastify';
import { newId } from '../../crypto/ids.js';
import {
  type HttpsEdgeRoute,
  httpsEdgeRoute,
  httpsEdgeRouteCreate,
  httpsEdgeRouteList,
  httpsEdgeRouteParams,
  httpsEdgeRoutesParams,
  httpsEdgeRouteUpdate,
} from '../../schemas/https-edge-routes.js';
import { idPrefixOf } from '../../schemas/id-prefixes.js';
import { edgeOrigin } from '../edge-resources/hostports.js';
import type { WireScope } from '../edge-resources/module-kinds.js';
import { HTTPS_EDGE_ROUTE_MODULES } from '../edge-resources/route-module-kinds.js';
import {
  modulesFromBody,
  modulesToWire,
  parseStoredModules,
  prepareModules,
  readStoredModules,
} from '../edge-resources/stored-modules.js';
import { ApiError, conflict } from '../errors/api-error.js';
import { recordEvent } from '../events/outbox.js';
import type { RequestContext } from '../http/context.js';
import { listResponse } from '../http/list-response.js';
import { defineRoute } from '../http/route.js';
import { fetchPage } from '../store/paging.js';
import { deleteRow, insertRow, type Row, requireRow, updateRow } from '../store/rows.js';
import { listQueryOf } from './collection-reads.js';
import { newDescribedRow } from './described-row.js';
import { defineModuleRoutes } from './edge-module-routes.js';

const TAG = 'HTTPS edge routes';
const KIND = 'HTTPS edge route';
const EDGE_KIND = 'HTTPS edge';
const TABLE = 'https_edge_routes';
const EVENT_RESOURCE = 'https_edge_route';
/** Routes are a collection under their edge, not a `defineCollection`: every request names the edge. */
const COLLECTION_PATH = '/edges/https/:edge_id/routes';
const ID_PREFIX = idPrefixOf(COLLECTION_PATH);
const routesPath = (edgeId: string) => COLLECTION_PATH.replace(':edge_id', edgeId);

type EdgeRow = Row<'https_edges'>;
type RouteRow = Row<'https_edge_routes'>;

/** A route's modules are shown from its edge: the SAML SP URLs are the edge's own public URLs. */
function routeScope(edge: Pick<EdgeRow, 'hostports'>): WireScope {
  return { edgeOrigin: edgeOrigin(JSON.parse(edge.hostports) as string[]) };
}

/** The read form of a route of `edge`. */
export function httpsEdgeRouteToWire(
  row: RouteRow,
  ctx: RequestContext,
  edge: Pick<EdgeRow, 'hostports'>,
): HttpsEdgeRoute {
  return {
    edge_id: row.edge_id,
    id: row.id,
    created_at: row.created_at,
    uri: ctx.url(`${routesPath(row.edge_id)}/${row.id}`),
    description: row.description,
    metadata: row.metadata,
    match_type: row.match_type as HttpsEdgeRoute['match_type'],
    match: row.match,
    ...modulesToWire(parseStoredModules(row.modules), HTTPS_EDGE_ROUTE_MODULES, ctx, routeScope(edge)),
  } as HttpsEdgeRoute;
}

/** Every route of an edge, oldest first: what the edge's delete removes. */
function routesOfEdge(ctx: RequestContext, edgeId: string): Promise<Row<'https_edge_routes'>[]> {
  return ctx.db.selectFrom(TABLE).selectAll().where('edge_id', '=', edgeId).orderBy('id', 'asc').execute();
}

/**
 * Every route of each of `edgeIds` (the edges' `routes` members), oldest first, grouped by edge id:
 * one query for a whole page of edges. An edge without routes has no entry.
 */
export async function routesOfEdges(
  ctx: RequestContext,
  edgeIds: readonly string[],
): Promise<Map<string, Row<'https_edge_routes'>[]>> {
  const byEdge = new Map<string, Row<'https_edge_routes'>[]>();
  if (edgeIds.length === 0) return byEdge;
  const rows = await ctx.db
    .selectFrom(TABLE)
    .selectAll()
    .where('edge_id', 'in', [...edgeIds])
    .orderBy('id', 'asc')
    .execute();
  for (const row of rows) {
    const routes = byEdge.get(row.edge_id);
    if (routes) routes.push(row);
    else byEdge.set(row.edge_id, [row]);
  }
  return byEdge;
}

/** Removes an edge's routes with the edge, recording each route's deletion like a DELETE would. */
export async function deleteRoutesOfEdge(ctx: RequestContext, edgeId: string): Promise<void> {
  for (const route of await routesOfEdge(ctx, edgeId)) {
    await deleteRow(ctx.db, TABLE, route.id);
    await recordEvent(ctx.db, { resource: EVENT_RESOURCE, action: 'deleted' }, route.id, null);
  }
}

/**
 * The route `id` of edge `edge_id`, with its edge; 404 when the edge is unknown or the route is
 * another edge's.
 */
async function requireEdgeRoute(
  ctx: RequestContext,
  params: { edge_id: string; id: string },
): Promise<{ route: RouteRow; edge: EdgeRow }> {
  const edge = await requireRow(ctx.db, 'https_edges', params.edge_id, EDGE_KIND);
  const row = await ctx.db
    .selectFrom(TABLE)
    .selectAll()
    .where('id', '=', params.id)
    .where('edge_id', '=', params.edge_id)
    .executeTakeFirst();
  if (!row) {
    throw new ApiError(
      'ERR_EDGEWARD_400',
      `${KIND} with id '${params.id}' not found on ${EDGE_KIND} '${params.edge_id}'`,
    );
  }
  return { route: row, edge };
}

/** The read form of route `id` of edge `edge_id` as it now stands (404 as `requireEdgeRoute`). */
async function currentRouteWire(
  ctx: RequestContext,
  params: { edge_id: string; id: string },
): Promise<HttpsEdgeRoute> {
  const { route, edge } = await requireEdgeRoute(ctx, params);
  return httpsEdgeRouteToWire(route, ctx, edge);
}

/**
 * Two routes of one edge may not select the same requests. The check gives the message; the UNIQUE
 * index on (edge_id, match_type, match) settles concurrent creates (a 409 either way).
 */
async function refuseDuplicateMatch(
  ctx: RequestContext,
  edgeId: string,
  matchType: string,
  match: string,
  exceptId?: string,
): Promise<void> {
  let query = ctx.db
    .selectFrom(TABLE)
    .select('id')
    .where('edge_id', '=', edgeId)
    .where('match_type', '=', matchType)
    .where('match', '=', match);
  if (exceptId !== undefined) query = query.where('id', '!=', exceptId);
  const other = await query.executeTakeFirst();
  if (other) {
    throw conflict(
      `match: route ${other.id} of ${EDGE_KIND} ${edgeId} already has match_type '${matchType}' and match ${JSON.stringify(match)}`,
    );
  }
}

export async function httpsEdgeRouteRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: COLLECTION_PATH,
    operationId: 'createHTTPSEdgeRoute',
    summary: 'Create a route of an HTTPS edge',
    tag: TAG,
    params: httpsEdgeRoutesParams,
    body: httpsEdgeRouteCreate,
    status: 201,
    response: httpsEdgeRoute,
    idempotent: true,
    event: { resource: EVENT_RESOURCE, action: 'created' },
    // The id is chosen first so that key pairs made before the transaction (SAML) can name the route.
    prepare: async ({ body }) => {
      const id = newId(ID_PREFIX);
      return { id, modules: await prepareModules(body, HTTPS_EDGE_ROUTE_MODULES, id, async () => ({})) };
    },
    handler: async ({ params, body, ctx, prepared }) => {
      const edge = await requireRow(ctx.db, 'https_edges', params.edge_id, EDGE_KIND);
      await refuseDuplicateMatch(ctx, edge.id, body.match_type, body.match);
      const described = { ...newDescribedRow(ID_PREFIX, body, ctx), id: prepared.id };
      const modules = await modulesFromBody(
        body,
        HTTPS_EDGE_ROUTE_MODULES,
        ctx,
        'create',
        `${routesPath(edge.id)}/{id}`,
        { table: TABLE, id: described.id, modules: {} },
        prepared.modules,
      );
      const row = {
        ...described,
        edge_id: edge.id,
        match_type: body.match_type,
        match: body.match,
        modules: JSON.stringify(modules),
      };
      await insertRow(ctx.db, TABLE, row);
      return httpsEdgeRouteToWire(row, ctx, edge);
    },
  });
  defineRoute(app, {
    method: 'GET',
    url: COLLECTION_PATH,
    operationId: 'listHTTPSEdgeRoutes',
    summary: 'List the routes of an HTTPS edge, newest first',
    tag: TAG,
    params: httpsEdgeRoutesParams,
    query: listQueryOf(ID_PREFIX),
    status: 200,
    response: httpsEdgeRouteList,
    handler: async ({ params, query, ctx }) => {
      const edge = await requireRow(ctx.db, 'https_edges', params.edge_id, EDGE_KIND);
      const page = await fetchPage(
        ctx.db.selectFrom(TABLE).selectAll().where('edge_id', '=', edge.id),
        'id',
        {
          limit: query.limit,
          beforeId: query.before_id,
        },
      );
      return listResponse(ctx, 'routes', routesPath(edge.id), query, page, (row) =>
        httpsEdgeRouteToWire(row, ctx, edge),
      );
    },
  });
  defineRoute(app, {
    method: 'GET',
    url: `${COLLECTION_PATH}/:id`,
    operationId: 'getHTTPSEdgeRoute',
    summary: 'Get a route of an HTTPS edge',
    tag: TAG,
    params: httpsEdgeRouteParams,
    status: 200,
    response: httpsEdgeRoute,
    handler: async ({ params, ctx }) => currentRouteWire(ctx, params),
  });
  defineRoute(app, {
    method: 'PATCH',
    url: `${COLLECTION_PATH}/:id`,
    operationId: 'updateHTTPSEdgeRoute',
    summary: 'Update a route: absent modules are unchanged, present ones are replaced completely',
    tag: TAG,
    params: httpsEdgeRouteParams,
    body: httpsEdgeRouteUpdate,
    status: 200,
    response: httpsEdgeRoute,
    event: { resource: EVENT_RESOURCE, action: 'updated' },
    // Key pairs (SAML) are made before the transaction, from the route's modules as they are now.
    prepare: ({ params, body }) =>
      prepareModules(body, HTTPS_EDGE_ROUTE_MODULES, params.id, () =>
        readStoredModules(app.edgeward.db, TABLE, params.id),
      ),
    handler: async ({ params, body, ctx, prepared }) => {
      const { route: row } = await requireEdgeRoute(ctx, params);
      const matchType = body.match_type ?? row.match_type;
      const match = body.match ?? row.match;
      if (matchType !== row.match_type || match !== row.match) {
        await refuseDuplicateMatch(ctx, row.edge_id, matchType, match, row.id);
      }
      const current = parseStoredModules(row.modules);
      const modules = await modulesFromBody(
        body,
        HTTPS_EDGE_ROUTE_MODULES,
        ctx,
        'update',
        `${routesPath(row.edge_id)}/${row.id}`,
        { table: TABLE, id: row.id, modules: current },
        prepared,
      );
      await updateRow(ctx.db, TABLE, row.id, {
        description: body.description,
        metadata: body.metadata,
        match_type: body.match_type,
        match: body.match,
        modules: JSON.stringify({ ...current, ...modules }),
      });
      return currentRouteWire(ctx, params);
    },
  });
  defineRoute(app, {
    method: 'DELETE',
    url: `${COLLECTION_PATH}/:id`,
    operationId: 'deleteHTTPSEdgeRoute',
    summary: 'Delete a route of an HTTPS edge',
    tag: TAG,
    params: httpsEdgeRouteParams,
    status: 204,
    event: { resource: EVENT_RESOURCE, action: 'deleted' },
    handler: async ({ params, ctx }) => {
      const { route: row } = await requireEdgeRoute(ctx, params);
      await deleteRow(ctx.db, TABLE, row.id);
      return undefined;
    },
  });
  defineModuleRoutes(
    app,
    {
      table: TABLE,
      path: `${COLLECTION_PATH}/:id`,
      params: httpsEdgeRouteParams,
      kind: KIND,
      operationStem: 'HTTPSEdgeRoute',
      eventResource: EVENT_RESOURCE,
      tag: TAG,
      load: async (params, ctx) => {
        const { route, edge } = await requireEdgeRoute(ctx, params);
        return { ...route, scope: routeScope(edge) };
      },
      readForm: (params, ctx) => currentRouteWire(ctx, params),
    },
    HTTPS_EDGE_ROUTE_MODULES,
  );
}
