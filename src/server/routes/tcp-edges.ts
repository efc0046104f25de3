import type { FastifyInstance } from 'fastify';
import { idParams } from '../../schemas/common.js';
import { type TcpEdge, tcpEdge, tcpEdgeCreate, tcpEdgeList, tcpEdgeUpdate } from '../../schemas/tcp-edges.js';
import { claimHostports, releaseHostports } from '../edges/hostports.js';
import { backendKind, ipRestrictionKind, policyKind } from '../edges/module-kinds.js';
import { modulesFromBody, modulesToWire, parseStoredModules } from '../edges/stored-modules.js';
import { ApiError } from '../errors/api-error.js';
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

const TAG = 'TCP edges';
const KIND = 'TCP edge';
const PATH = '/edges/tcp';
export const TCP_EDGE_MODULES = [backendKind, ipRestrictionKind, policyKind];

export function tcpEdgeToWire(row: Row<'tcp_edges'>, ctx: RequestContext): TcpEdge {
  return {
    ...describedToWire(row, ctx, PATH),
    hostports: JSON.parse(row.hostports) as string[],
    ...modulesToWire(parseStoredModules(row.modules), TCP_EDGE_MODULES, ctx),
  } as TcpEdge;
}

/** A TCP edge listens only on addresses the account reserved. */
async function requireReservedAddrs(ctx: RequestContext, hostports: readonly string[]): Promise<void> {
  if (hostports.length === 0) return;
  const reserved = new Set(
    (
      await ctx.db
        .selectFrom('reserved_addrs')
        .select('addr')
        .where('addr', 'in', [...hostports])
        .execute()
    ).map((row) => row.addr),
  );
  hostports.forEach((hostport, index) => {
    if (!reserved.has(hostport)) {
      throw new ApiError(
        'ERR_EDGEWARD_103',
        `hostports[${index}]: '${hostport}' is not a reserved address of this account; reserve one with POST /reserved_addrs`,
      );
    }
  });
}

export async function tcpEdgeRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: PATH,
    operationId: 'createTCPEdge',
    summary: 'Create a TCP edge on reserved addresses',
    tag: TAG,
    body: tcpEdgeCreate,
    status: 201,
    response: tcpEdge,
    idempotent: true,
    event: { resource: 'tcp_edge', action: 'created' },
    handler: async ({ body, ctx }) => {
      await requireReservedAddrs(ctx, body.hostports);
      const row = {
        ...newDescribedRow('edgtcp', body, ctx),
        hostports: JSON.stringify(body.hostports),
        modules: JSON.stringify(await modulesFromBody(body, TCP_EDGE_MODULES, ctx, 'create', `${PATH}/{id}`)),
      };
      await claimHostports(ctx, row.id, body.hostports);
      await insertRow(ctx.db, 'tcp_edges', row);
      return tcpEdgeToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'tcp_edges',
    eventResource: 'tcp_edge',
    path: PATH,
    kind: KIND,
    name: 'TCPEdge',
    tag: TAG,
    summary: 'Update a TCP edge: absent modules are unchanged, present ones are replaced completely',
    body: tcpEdgeUpdate,
    item: tcpEdge,
    toChanges: async (body, row, ctx) => {
      const modules = await modulesFromBody(body, TCP_EDGE_MODULES, ctx, 'update', `${PATH}/${row.id}`);
      if (body.hostports !== undefined) {
        await requireReservedAddrs(ctx, body.hostports);
        await claimHostports(ctx, row.id, body.hostports);
      }
      return {
        description: body.description,
        metadata: body.metadata,
        hostports: body.hostports === undefined ? undefined : JSON.stringify(body.hostports),
        modules: JSON.stringify({ ...parseStoredModules(row.modules), ...modules }),
      };
    },
    toWire: tcpEdgeToWire,
  });
  defineCollectionReads(app, {
    table: 'tcp_edges',
    eventResource: 'tcp_edge',
    path: PATH,
    listKey: 'tcp_edges',
    kind: KIND,
    name: 'TCPEdge',
    plural: 'TCPEdges',
    tag: TAG,
    item: tcpEdge,
    list: tcpEdgeList,
    toWire: tcpEdgeToWire,
    beforeDelete: (row, ctx) => releaseHostports(ctx, row.id),
  });
  defineModuleRoutes(
    app,
    {
      table: 'tcp_edges',
      path: `${PATH}/:id`,
      params: idParams,
      kind: KIND,
      operationStem: 'TCPEdge',
      eventResource: 'tcp_edge',
      tag: TAG,
      load: (params, ctx) => requireRow(ctx.db, 'tcp_edges', params.id, KIND),
    },
    TCP_EDGE_MODULES,
  );
}
