import type { FastifyInstance } from 'fastify';
import { tcpEdge, tcpEdgeCreate, tcpEdgeList, tcpEdgeUpdate } from '../../schemas/tcp-edges.js';
import { backendKind, ipRestrictionKind, policyKind } from '../edge-resources/module-kinds.js';
import { ApiError } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineEdgeCollection, defineEdgeRoutes } from './edge-collection.js';

const TCP_EDGES = defineEdgeCollection({
  table: 'tcp_edges',
  path: '/edges/tcp',
  kind: 'TCP edge',
  name: 'TCPEdge',
  plural: 'TCPEdges',
  tag: 'TCP edges',
  eventResource: 'tcp_edge',
  listKey: 'tcp_edges',
  modules: [backendKind, ipRestrictionKind, policyKind],
  item: tcpEdge,
  list: tcpEdgeList,
});

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
  defineEdgeRoutes(app, TCP_EDGES, {
    create: tcpEdgeCreate,
    update: tcpEdgeUpdate,
    summaries: {
      create: 'Create a TCP edge on reserved addresses',
      update: 'Update a TCP edge: absent modules are unchanged, present ones are replaced completely',
    },
    checkHostports: requireReservedAddrs,
  });
}
