import type { FastifyInstance } from 'fastify';
import { idParams } from '../../schemas/common.js';
import { type TlsEdge, tlsEdge, tlsEdgeCreate, tlsEdgeList, tlsEdgeUpdate } from '../../schemas/tls-edges.js';
import { claimHostports, releaseHostports } from '../edges/hostports.js';
import {
  backendKind,
  ipRestrictionKind,
  mutualTlsKind,
  policyKind,
  tlsTerminationKind,
} from '../edges/module-kinds.js';
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

const TAG = 'TLS edges';
const KIND = 'TLS edge';
const PATH = '/edges/tls';
export const TLS_EDGE_MODULES = [
  backendKind,
  ipRestrictionKind,
  mutualTlsKind,
  tlsTerminationKind,
  policyKind,
];

export function tlsEdgeToWire(row: Row<'tls_edges'>, ctx: RequestContext): TlsEdge {
  return {
    ...describedToWire(row, ctx, PATH),
    hostports: JSON.parse(row.hostports) as string[],
    ...modulesToWire(parseStoredModules(row.modules), TLS_EDGE_MODULES, ctx),
  } as TlsEdge;
}

export async function tlsEdgeRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: PATH,
    operationId: 'createTLSEdge',
    summary: 'Create a TLS edge',
    tag: TAG,
    body: tlsEdgeCreate,
    status: 201,
    response: tlsEdge,
    idempotent: true,
    event: { resource: 'tls_edge', action: 'created' },
    handler: async ({ body, ctx }) => {
      const row = {
        ...newDescribedRow('edgtls', body, ctx),
        hostports: JSON.stringify(body.hostports),
        modules: JSON.stringify(await modulesFromBody(body, TLS_EDGE_MODULES, ctx, 'create', `${PATH}/{id}`)),
      };
      await claimHostports(ctx, row.id, body.hostports);
      await insertRow(ctx.db, 'tls_edges', row);
      return tlsEdgeToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'tls_edges',
    eventResource: 'tls_edge',
    path: PATH,
    kind: KIND,
    name: 'TLSEdge',
    tag: TAG,
    summary: 'Update a TLS edge: absent modules are unchanged, present ones are replaced completely',
    body: tlsEdgeUpdate,
    item: tlsEdge,
    toChanges: async (body, row, ctx) => {
      const modules = await modulesFromBody(body, TLS_EDGE_MODULES, ctx, 'update', `${PATH}/${row.id}`);
      if (body.hostports !== undefined) await claimHostports(ctx, row.id, body.hostports);
      return {
        description: body.description,
        metadata: body.metadata,
        hostports: body.hostports === undefined ? undefined : JSON.stringify(body.hostports),
        modules: JSON.stringify({ ...parseStoredModules(row.modules), ...modules }),
      };
    },
    toWire: tlsEdgeToWire,
  });
  defineCollectionReads(app, {
    table: 'tls_edges',
    eventResource: 'tls_edge',
    path: PATH,
    listKey: 'tls_edges',
    kind: KIND,
    name: 'TLSEdge',
    plural: 'TLSEdges',
    tag: TAG,
    item: tlsEdge,
    list: tlsEdgeList,
    toWire: tlsEdgeToWire,
    beforeDelete: (row, ctx) => releaseHostports(ctx, row.id),
  });
  defineModuleRoutes(
    app,
    {
      table: 'tls_edges',
      path: `${PATH}/:id`,
      params: idParams,
      kind: KIND,
      operationStem: 'TLSEdge',
      eventResource: 'tls_edge',
      tag: TAG,
      load: (params, ctx) => requireRow(ctx.db, 'tls_edges', params.id, KIND),
    },
    TLS_EDGE_MODULES,
  );
}
