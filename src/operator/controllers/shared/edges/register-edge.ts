import type { KubernetesObject } from '@kubernetes/client-node';
import type { RegisteredController } from '../../../runtime/controller.js';
import type { Manager } from '../../../runtime/manager.js';
import type { ResourceKind } from '../../../runtime/resource-types.js';
import type { ManagedObject, RemoteResource, ResourceSync } from '../../managed/managed-resource.js';
import { registerManaged } from '../../managed/register-managed.js';
import { CERTIFICATE_AUTHORITY, IP_POLICY } from '../../resource-types.js';
import {
  type EdgeReferenceInformers,
  type EdgeReferencingSpec,
  edgeReferences,
  type ResolvedEdge,
} from './references.js';

/**
 * Registers an edge kind (TLS, TCP, HTTPS). Its IPPolicy and CertificateAuthority references are
 * indexed, so a referenced object becoming Ready (or getting a new server id) reconciles the
 * edges that name it.
 */
export function registerEdge<
  T extends ManagedObject & { spec: EdgeReferencingSpec },
  Remote extends RemoteResource,
>(
  manager: Manager,
  kind: ResourceKind,
  makeSync: (references: EdgeReferenceInformers) => ResourceSync<T, ResolvedEdge, Remote>,
): RegisteredController<T> {
  const sync = makeSync({
    ipPolicies: manager.informer<KubernetesObject>(IP_POLICY),
    certificateAuthorities: manager.informer<KubernetesObject>(CERTIFICATE_AUTHORITY),
  });
  return registerManaged(manager, kind, sync, {
    references: (edge) => edgeReferences(edge.spec),
    watches: [{ kind: IP_POLICY }, { kind: CERTIFICATE_AUTHORITY }],
  });
}
