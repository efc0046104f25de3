import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { SECRET } from '../../runtime/resource-types.js';
import { sameJson } from '../../runtime/same-json.js';
import { referenceStateChanged } from '../../runtime/watch-mappers.js';
import { registerManaged } from '../managed/register-managed.js';
import { HTTPS_EDGE, HTTPS_EDGE_ROUTE, IP_POLICY } from '../resource-types.js';
import { edgeReferences } from '../shared/edges/references.js';
import type { ReferencedObject } from '../shared/ready-references.js';
import { NAMED_SECRETS_WATCH, type SecretObject, secretReferences } from '../shared/secret-values.js';
import { routeSecretRequests } from './route-modules.js';
import { type HttpsEdgeRouteObject, httpsEdgeRouteSync, routeApiOf } from './sync.js';

/**
 * An HTTPSEdge change its routes must follow: a new id or Ready flip, or new hostports (the SAML
 * service-provider URLs in a route's status start with the edge's origin).
 */
function edgeChangedForRoutes(previous: KubernetesObject, object: KubernetesObject): boolean {
  const hostports = (edge: KubernetesObject) =>
    (edge as { status?: { hostports?: unknown } }).status?.hostports;
  return referenceStateChanged(previous, object) || !sameJson(hostports(previous), hostports(object));
}

/**
 * HTTPSEdgeRoute -> `/edges/https/{edge_id}/routes`. Its HTTPSEdge and IPPolicy references are
 * indexed, so the edge or a policy becoming Ready (or getting a new server id) reconciles the
 * routes naming it; so does a change of a Secret it reads (its values are sent again).
 */
export function registerHttpsEdgeRoute(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<HttpsEdgeRouteObject> {
  const sync = httpsEdgeRouteSync({
    api,
    routes: routeApiOf(api.httpsEdgeRoutes),
    edges: manager.informer<ReferencedObject>(HTTPS_EDGE),
    ipPolicies: manager.informer<ReferencedObject>(IP_POLICY),
    secrets: manager.resources<SecretObject>(SECRET),
  });
  return registerManaged(manager, HTTPS_EDGE_ROUTE, sync, {
    references: (route) => [
      ...(route.spec.edgeRef ? [{ kind: HTTPS_EDGE.kind, name: route.spec.edgeRef.name }] : []),
      ...edgeReferences(route.spec),
      ...secretReferences(routeSecretRequests(route.spec)),
    ],
    watches: [
      { kind: HTTPS_EDGE, shouldEnqueue: edgeChangedForRoutes },
      { kind: IP_POLICY },
      NAMED_SECRETS_WATCH,
    ],
  });
}
