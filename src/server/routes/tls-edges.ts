import type { FastifyInstance } from 'fastify';
import { tlsEdge, tlsEdgeCreate, tlsEdgeList, tlsEdgeUpdate } from '../../schemas/tls-edges.js';
import { refuseTcpAddrDomain } from '../edge-resources/hostports.js';
import {
  backendKind,
  ipRestrictionKind,
  mutualTlsKind,
  policyKind,
  tlsTerminationKind,
} from '../edge-resources/module-kinds.js';
import { refuseMutualTlsWithPassthrough } from '../edge-resources/tls-passthrough.js';
import { defineEdgeCollection, defineEdgeRoutes } from './edge-collection.js';

const TLS_EDGES = defineEdgeCollection({
  table: 'tls_edges',
  path: '/edges/tls',
  kind: 'TLS edge',
  name: 'TLSEdge',
  plural: 'TLSEdges',
  tag: 'TLS edges',
  eventResource: 'tls_edge',
  listKey: 'tls_edges',
  modules: [backendKind, ipRestrictionKind, mutualTlsKind, tlsTerminationKind, policyKind],
  item: tlsEdge,
  list: tlsEdgeList,
});

export async function tlsEdgeRoutes(app: FastifyInstance): Promise<void> {
  defineEdgeRoutes(app, TLS_EDGES, {
    create: tlsEdgeCreate,
    update: tlsEdgeUpdate,
    summaries: {
      create: 'Create a TLS edge',
      update: 'Update a TLS edge: absent modules are unchanged, present ones are replaced completely',
    },
    checkHostports: refuseTcpAddrDomain,
    checkModules: refuseMutualTlsWithPassthrough,
  });
}
