import type { EdgewardClient } from '../../../client/index.js';
import type { TlsEdge } from '../../../schemas/tls-edges.js';
import type { TlsEdgeSpec, TlsEdgeStatus } from '../../crds/definitions/tls-edge.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import {
  backendAdapter,
  ipRestrictionAdapter,
  mutualTlsAdapter,
  policyAdapter,
  tlsTerminationAdapter,
} from '../shared/edges/edge-modules.js';
import { edgeApiOf, edgeSync, type RemoteEdge } from '../shared/edges/edge-sync.js';
import type { EdgeReferenceInformers, ResolvedEdge } from '../shared/edges/references.js';

export type TlsEdgeObject = ManagedObject & { spec: TlsEdgeSpec; status?: TlsEdgeStatus };

/**
 * TLSEdge -> `/edges/tls` with its five modules: backend (an id, or a tunnel-group backend the
 * operator keeps for `backend.labels`), ipRestriction, mutualTls, tlsTermination and policy.
 */
export function tlsEdgeSync(
  api: EdgewardClient,
  references: EdgeReferenceInformers,
): ResourceSync<TlsEdgeObject, ResolvedEdge, RemoteEdge<TlsEdge>> {
  return edgeSync<TlsEdgeObject, TlsEdge>(api, {
    edges: edgeApiOf(api.tlsEdges),
    references,
    modules: {
      backend: { adapter: backendAdapter, specOf: (edge) => edge.spec.backend },
      ip_restriction: { adapter: ipRestrictionAdapter, specOf: (edge) => edge.spec.ipRestriction },
      mutual_tls: { adapter: mutualTlsAdapter, specOf: (edge) => edge.spec.mutualTls },
      tls_termination: { adapter: tlsTerminationAdapter, specOf: (edge) => edge.spec.tlsTermination },
      policy: { adapter: policyAdapter, specOf: (edge) => edge.spec.policy },
    },
  });
}
