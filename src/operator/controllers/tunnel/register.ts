import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager, ReplicaReport } from '../../runtime/manager.js';
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

/**
 * Tunnel: the operator carries these tunnels **in its own process**, one `Agent` (src/agent) per
 * Tunnel CR, rather than running an agent Deployment per Tunnel. Why: no image to pull and no pod
 * to schedule per tunnel, the token is read straight from the Secret (never put in a pod spec or
 * env), and status is written from what the agents just heard from the edge, not from what a
 * sidecar last reported. The cost: the operator's pods carry the traffic (size them for it).
 *
 * High availability: the controller runs in **every replica** (`everyReplica`), so each replica
 * runs each Tunnel's agent, its own sessions in the tunnel group (the edge spreads connections over
 * them): losing a replica, the leader included, loses no Tunnel. Only the leader writes status. It
 * cannot see the other replicas' agents, so each replica reports the sessions of its agents on a
 * Lease of its own (`manager.replicaReport`, written at most once a second, renewed while it has
 * sessions, deleted when it stops); the leader reads those reports, reconciles the Tunnels whose
 * reported sessions changed, and lists them all in `status.sessionIds`. A replica killed without
 * a word stops counting when its report goes stale (one leader lease duration without renewal).
 * On shutdown (SIGTERM, a lost Lease) a replica stops its agents once its reconciles are done,
 * then deletes its report.
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
  let stopping = false;
  let report: ReplicaReport | undefined;
  const agents = new TunnelAgents({
    agentVersion: OPERATOR_AGENT_VERSION,
    // Read by each dial: a new --edge-ca restarts no agent, the next connection trusts it.
    ca: settings.edge?.ca,
    mayRun: () => !stopping,
    onChange: (key) => registered?.queue.add(key),
    // This replica's sessions changed: tell the leader (within a second).
    onSessionsChange: () => report?.changed(),
  });
  report = manager.replicaReport(() => agents.sessions());
  // Another replica's sessions of a Tunnel changed: the leader rewrites its status.
  report?.onPeerChange((keys) => {
    if (!manager.isLeader) return;
    for (const key of keys) registered?.queue.add(key);
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
    ...(report ? { peers: report } : {}),
  };
  registered = manager.register<TunnelObject>({
    kind: TUNNEL,
    everyReplica: true,
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
    reconcile: (request, context) => reconcileTunnel(deps, request, context.leading),
  });
  // After the last reconcile, before the replica's report is deleted and its Lease released.
  manager.onShutdown(() => {
    stopping = true;
    if (agents.size > 0) manager.log.info({ agents: agents.size }, 'stopping the Tunnel agents');
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
