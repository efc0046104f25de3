import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import type { ObjectReference } from '../../runtime/reference-index.js';
import { parseKey, SECRET } from '../../runtime/resource-types.js';
import { ownersOf, referenceStateChanged } from '../../runtime/watch-mappers.js';
import { TUNNEL, TUNNEL_CREDENTIAL } from '../resource-types.js';
import { NAMED_SECRETS_WATCH, type SecretObject } from '../shared/secret-values.js';
import type { TunnelCredentialObject } from '../tunnel-credential/sync.js';
import { TunnelAgents } from './agents.js';
import { OPERATOR_AGENT_VERSION, type TunnelEdgeSettings } from './settings.js';
import { reconcileTunnel, type TunnelDeps, type TunnelObject } from './sync.js';
import {
  ENDPOINT_SLICE,
  type EndpointSliceObject,
  SERVICE,
  SERVICE_NAME_LABEL,
  type ServiceObject,
} from './upstream.js';

/** How often a replica checks that it still leads while it runs agents. */
const LEADERSHIP_CHECK_MS = 1000;

/**
 * Tunnel: the operator carries these tunnels **in its own process**, one `Agent` (src/agent) per
 * Tunnel CR, rather than running an agent Deployment per Tunnel. Why: no image to pull and no pod
 * to schedule per tunnel, the token is read straight from the Secret (never put in a pod spec or
 * env), and status is written by the process that holds the session, so Ready and the session id
 * are what the edge just said, not what a sidecar last reported. The cost: the operator's pod
 * carries the traffic (size its resources for it; one replica leads and runs them all).
 *
 * Leader election: reconciles run only on the leader, so only the leader starts agents; every
 * second a replica running agents checks `manager.isLeader` and stops them all the moment it is
 * no longer leading (a new leader starts its own within its first reconciles), and they stop with
 * the manager (SIGTERM, a lost Lease). Sessions therefore overlap only for that second.
 *
 * What it watches: the TunnelCredentials and Secrets a Tunnel names (a new or changed token
 * restarts the agent), the token Secrets those credentials own, and the Services and
 * EndpointSlices (`kubernetes.io/service-name`) of its `forward.service` (a changed endpoint is
 * dialed by the next carried connection: the session stays).
 */
export function registerTunnel(
  manager: Manager,
  _api: EdgewardClient,
  settings: { edge?: TunnelEdgeSettings } = {},
): RegisteredController<TunnelObject> {
  let registered: RegisteredController<TunnelObject> | undefined;
  const referrers = (kind: string, object: KubernetesObject, name = object.metadata?.name) =>
    name
      ? (registered?.references?.referrersOf({ kind, namespace: object.metadata?.namespace, name }) ?? [])
      : [];
  const agents = new TunnelAgents({
    agentVersion: OPERATOR_AGENT_VERSION,
    mayRun: () => manager.isLeader,
    onChange: (key) => registered?.queue.add(key),
  });
  const deps: TunnelDeps = {
    client: manager.resources<TunnelObject>(TUNNEL),
    tunnels: manager.informer<TunnelObject>(TUNNEL),
    credentials: manager.informer<TunnelCredentialObject>(TUNNEL_CREDENTIAL),
    secrets: manager.informer<SecretObject>(SECRET, NAMED_SECRETS_WATCH.selectors),
    secretClient: manager.resources<SecretObject>(SECRET),
    services: manager.informer<ServiceObject>(SERVICE),
    slices: manager.informer<EndpointSliceObject>(ENDPOINT_SLICE, SLICE_SELECTORS),
    statusWriter: manager.statusWriter,
    events: manager.events,
    agents,
    edge: settings.edge ?? {},
  };
  registered = manager.register<TunnelObject>({
    kind: TUNNEL,
    references: tunnelReferences,
    watches: [
      { kind: TUNNEL_CREDENTIAL, shouldEnqueue: credentialChanged },
      {
        ...NAMED_SECRETS_WATCH,
        // A Secret the Tunnel names, or the token Secret of a TunnelCredential it names.
        map: (secret) => [
          ...referrers(SECRET.kind, secret),
          ...ownersOf(TUNNEL_CREDENTIAL)(secret).flatMap((key) =>
            referrers(TUNNEL_CREDENTIAL.kind, secret, parseKey(key).name),
          ),
        ],
      },
      { kind: SERVICE, shouldEnqueue: () => true },
      {
        kind: ENDPOINT_SLICE,
        selectors: SLICE_SELECTORS,
        map: (slice) => referrers(SERVICE.kind, slice, slice.metadata?.labels?.[SERVICE_NAME_LABEL]),
        shouldEnqueue: () => true,
      },
    ],
    reconcile: (request) => reconcileTunnel(deps, request),
  });
  const leadership = setInterval(() => {
    if (agents.size > 0 && !manager.isLeader) {
      manager.log.warn({ agents: agents.size }, 'not leading: stopping the Tunnel agents');
      agents.stopAll();
    }
  }, LEADERSHIP_CHECK_MS);
  leadership.unref();
  void manager.done.then(() => {
    clearInterval(leadership);
    agents.stopAll();
  });
  return registered;
}

/** Only the slices of Services: the EndpointSlice controller labels each with its Service's name. */
const SLICE_SELECTORS = { labelSelector: SERVICE_NAME_LABEL };

function tunnelReferences(tunnel: TunnelObject): ObjectReference[] {
  const { credentialRef, tokenSecretRef, forward } = tunnel.spec;
  return [
    ...(credentialRef ? [{ kind: TUNNEL_CREDENTIAL.kind, name: credentialRef.name }] : []),
    ...(tokenSecretRef ? [{ kind: SECRET.kind, name: tokenSecretRef.name }] : []),
    ...(forward.service ? [{ kind: SERVICE.kind, name: forward.service.name }] : []),
  ];
}

/**
 * A TunnelCredential matters to its Tunnels when it appears, goes, changes its token Secret's name
 * or its spec (a refused agent is dialed again at once): the default filter plus those two.
 */
function credentialChanged(previous: KubernetesObject, object: KubernetesObject): boolean {
  const before = previous as TunnelCredentialObject;
  const after = object as TunnelCredentialObject;
  return (
    referenceStateChanged(previous, object) ||
    before.metadata?.generation !== after.metadata?.generation ||
    before.status?.tokenSecretName !== after.status?.tokenSecretName
  );
}
