import type { EdgewardClient } from '../../../client/index.js';
import type { TcpEdge } from '../../../schemas/tcp-edges.js';
import type { TcpEdgeSpec, TcpEdgeStatus } from '../../crds/definitions/tcp-edge.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { backendAdapter, ipRestrictionAdapter, policyAdapter } from '../shared/edges/edge-modules.js';
import { edgeApiOf, edgeSync, type RemoteEdge } from '../shared/edges/edge-sync.js';
import type { EdgeReferenceInformers, ResolvedEdge } from '../shared/edges/references.js';

export type TcpEdgeObject = ManagedObject & { spec: TcpEdgeSpec; status?: TcpEdgeStatus };

/**
 * TCPEdge -> `/edges/tcp` with backend, ipRestriction and policy. Its hostports must be reserved
 * addresses (the server checks; a ReservedAddress's `status.addr` is what to put there).
 */
export function tcpEdgeSync(
  api: EdgewardClient,
  references: EdgeReferenceInformers,
): ResourceSync<TcpEdgeObject, ResolvedEdge, RemoteEdge<TcpEdge>> {
  return edgeSync<TcpEdgeObject, TcpEdge>(api, {
    edges: edgeApiOf(api.tcpEdges),
    references,
    modules: {
      backend: { adapter: backendAdapter, specOf: (edge) => edge.spec.backend },
      ip_restriction: { adapter: ipRestrictionAdapter, specOf: (edge) => edge.spec.ipRestriction },
      policy: { adapter: policyAdapter, specOf: (edge) => edge.spec.policy },
    },
  });
}
