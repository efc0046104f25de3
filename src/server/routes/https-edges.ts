import type { FastifyInstance } from 'fastify';
import { idParams } from '../../schemas/common.js';
import {
  type HttpsEdge,
  httpsEdge,
  httpsEdgeCreate,
  httpsEdgeList,
  httpsEdgeUpdate,
} from '../../schemas/https-edges.js';
import { claimHostports, releaseHostports } from '../edges/hostports.js';
import { mutualTlsKind, tlsTerminationAtEdgeKind } from '../edges/module-kinds.js';
import { modulesFromBody, modulesToWire, parseStoredModules } from '../edges/stored-modules.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import {
  defineCollectionReads,
  defineUpdateRoute,
  describedToWire,
  insertRow,
  newDescribedRow,
  type Row,
  requireRow,
} from './collection.js';
import { defineModuleRoutes } from './edge-module-routes.js';
import { deleteRoutesOfEdge, httpsEdgeRouteToWire, routesOfEdge } from './https-edge-routes.js';

const TAG = 'HTTPS edges';
const KIND = 'HTTPS edge';
const PATH = '/edges/https';
export const HTTPS_EDGE_MODULES = [mutualTlsKind, tlsTerminationAtEdgeKind];

/** The read form, with every route of the edge (oldest first). */
export async function httpsEdgeToWire(row: Row<'https_edges'>, ctx: RequestContext): Promise<HttpsEdge> {
  const routes = await routesOfEdge(ctx, row.id);
  return {
    ...describedToWire(row, ctx, PATH),
    hostports: JSON.parse(row.hostports) as string[],
    ...modulesToWire(parseStoredModules(row.modules), HTTPS_EDGE_MODULES, ctx),
    routes: routes.map((route) => httpsEdgeRouteToWire(route, ctx)),
  } as HttpsEdge;
}

export async function httpsEdgeRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: PATH,
    operationId: 'createHTTPSEdge',
    summary: 'Create an HTTPS edge (its routes are created under it)',
    tag: TAG,
    body: httpsEdgeCreate,
    status: 201,
    response: httpsEdge,
    idempotent: true,
    event: { resource: 'https_edge', action: 'created' },
    handler: async ({ body, ctx }) => {
      const row = {
        ...newDescribedRow('edghts', body, ctx),
        hostports: JSON.stringify(body.hostports),
        modules: JSON.stringify(
          await modulesFromBody(body, HTTPS_EDGE_MODULES, ctx, 'create', `${PATH}/{id}`),
        ),
      };
      await claimHostports(ctx, row.id, body.hostports);
      await insertRow(ctx.db, 'https_edges', row);
      return httpsEdgeToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'https_edges',
    eventResource: 'https_edge',
    path: PATH,
    kind: KIND,
    name: 'HTTPSEdge',
    tag: TAG,
    summary: 'Update an HTTPS edge: absent modules are unchanged, present ones are replaced completely',
    body: httpsEdgeUpdate,
    item: httpsEdge,
    toChanges: async (body, row, ctx) => {
      const modules = await modulesFromBody(body, HTTPS_EDGE_MODULES, ctx, 'update', `${PATH}/${row.id}`);
      if (body.hostports !== undefined) await claimHostports(ctx, row.id, body.hostports);
      return {
        description: body.description,
        metadata: body.metadata,
        hostports: body.hostports === undefined ? undefined : JSON.stringify(body.hostports),
        modules: JSON.stringify({ ...parseStoredModules(row.modules), ...modules }),
      };
    },
    toWire: httpsEdgeToWire,
  });
  defineCollectionReads(app, {
    table: 'https_edges',
    eventResource: 'https_edge',
    path: PATH,
    listKey: 'https_edges',
    kind: KIND,
    name: 'HTTPSEdge',
    plural: 'HTTPSEdges',
    tag: TAG,
    item: httpsEdge,
    list: httpsEdgeList,
    toWire: httpsEdgeToWire,
    // The routes go with their edge, and the hostports become free for another edge.
    beforeDelete: async (row, ctx) => {
      await deleteRoutesOfEdge(ctx, row.id);
      await releaseHostports(ctx, row.id);
    },
  });
  defineModuleRoutes(
    app,
    {
      table: 'https_edges',
      path: `${PATH}/:id`,
      params: idParams,
      kind: KIND,
      operationStem: 'HTTPSEdge',
      eventResource: 'https_edge',
      tag: TAG,
      load: (params, ctx) => requireRow(ctx.db, 'https_edges', params.id, KIND),
    },
    HTTPS_EDGE_MODULES,
  );
}
