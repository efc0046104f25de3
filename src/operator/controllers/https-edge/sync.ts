import type { EdgewardClient } from '../../../client/index.js';
import type { HttpsEdge } from '../../../schemas/https-edges.js';
import type { HttpsEdgeSpec, HttpsEdgeStatus } from '../../crds/definitions/https-edge.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { mutualTlsAdapter, tlsTerminationAtEdgeAdapter } from '../shared/edges/edge-modules.js';
import { edgeApiOf, edgeSync, type RemoteEdge } from '../shared/edges/edge-sync.js';
import type { EdgeReferenceInformers, ResolvedEdge } from '../shared/edges/references.js';

export type HttpsEdgeObject = ManagedObject & { spec: HttpsEdgeSpec; status?: HttpsEdgeStatus };

/**
 * HTTPSEdge -> `/edges/https` with its edge-level modules (mutualTls, tlsTermination). Its routes
 * are HTTPSEdgeRoute objects of their own; they name the edge and wait for it to be Ready.
 */
export function httpsEdgeSync(
  api: EdgewardClient,
  references: EdgeReferenceInformers,
): ResourceSync<HttpsEdgeObject, ResolvedEdge, RemoteEdge<HttpsEdge>> {
  return edgeSync<HttpsEdgeObject, HttpsEdge>(api, {
    edges: edgeApiOf(api.httpsEdges),
    references,
    modules: {
      mutual_tls: { adapter: mutualTlsAdapter, specOf: (edge) => edge.spec.mutualTls },
      tls_termination: { adapter: tlsTerminationAtEdgeAdapter, specOf: (edge) => edge.spec.tlsTermination },
    },
  });
}
