import type { FastifyInstance } from 'fastify';
import { httpsEdge, httpsEdgeCreate, httpsEdgeList, httpsEdgeUpdate } from '../../schemas/https-edges.js';
import { refuseTcpAddrDomain } from '../edge-resources/hostports.js';
import { mutualTlsKind, tlsTerminationAtEdgeKind } from '../edge-resources/module-kinds.js';
import { defineEdgeCollection, defineEdgeRoutes } from './edge-collection.js';
import { deleteRoutesOfEdge, httpsEdgeRouteToWire, routesOfEdges } from './https-edge-routes.js';

const HTTPS_EDGES = defineEdgeCollection({
  table: 'https_edges',
  path: '/edges/https',
  kind: 'HTTPS edge',
  name: 'HTTPSEdge',
  plural: 'HTTPSEdges',
  tag: 'HTTPS edges',
  eventResource: 'https_edge',
  listKey: 'https_edges',
  modules: [mutualTlsKind, tlsTerminationAtEdgeKind],
  item: httpsEdge,
  list: httpsEdgeList,
  // The read form has every route of the edge, oldest first.
  extraWire: async (rows, ctx) => {
    const edgeIds = rows.map((row) => row.id);
    const routes = await routesOfEdges(ctx, edgeIds);
    return rows.map((row) => ({
      routes: (routes.get(row.id) ?? []).map((route) => httpsEdgeRouteToWire(route, ctx, row)),
    }));
  },
});

export async function httpsEdgeRoutes(app: FastifyInstance): Promise<void> {
  defineEdgeRoutes(app, HTTPS_EDGES, {
    create: httpsEdgeCreate,
    update: httpsEdgeUpdate,
    summaries: {
      create: 'Create an HTTPS edge (its routes are created under it)',
      update: 'Update an HTTPS edge: absent modules are unchanged, present ones are replaced completely',
    },
    checkHostports: refuseTcpAddrDomain,
    // The routes go with their edge (each recording its deletion).
    beforeDelete: (row, ctx) => deleteRoutesOfEdge(ctx, row.id),
  });
}
