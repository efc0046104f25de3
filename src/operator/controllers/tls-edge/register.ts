import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { CERTIFICATE_AUTHORITY, IP_POLICY, TLS_EDGE } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type TlsEdgeObject, tlsEdgeSync } from './sync.js';

/**
 * TLSEdge -> `/edges/tls`. Its IPPolicy and CertificateAuthority references are indexed, so a
 * referenced object becoming Ready (or getting a new server id) reconciles the edges that name it.
 */
export function registerTlsEdge(manager: Manager, api: EdgewardClient): RegisteredController<TlsEdgeObject> {
  const client = manager.resources<TlsEdgeObject>(TLS_EDGE);
  const informer = manager.informer<TlsEdgeObject>(TLS_EDGE);
  const sync = tlsEdgeSync({
    api,
    ipPolicies: manager.informer<KubernetesObject>(IP_POLICY),
    certificateAuthorities: manager.informer<KubernetesObject>(CERTIFICATE_AUTHORITY),
  });
  const controller = { manager, kind: TLS_EDGE, client, informer, sync };
  return manager.register<TlsEdgeObject>({
    kind: TLS_EDGE,
    references: (edge) => [
      ...(edge.spec.ipRestriction?.ipPolicyRefs ?? []).map(({ name }) => ({ kind: IP_POLICY.kind, name })),
      ...(edge.spec.mutualTls?.certificateAuthorityRefs ?? []).map(({ name }) => ({
        kind: CERTIFICATE_AUTHORITY.kind,
        name,
      })),
    ],
    watches: [{ kind: IP_POLICY }, { kind: CERTIFICATE_AUTHORITY }],
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
