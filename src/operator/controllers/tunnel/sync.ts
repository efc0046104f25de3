import type { KubernetesObject } from '@kubernetes/client-node';
import { type ForwardTarget, parseForwardTarget } from '../../../agent/forward-target.js';
import { parseEdgeAddr } from '../../../agent/options.js';
import { tunnelGroupLabels } from '../../../schemas/tunnel-group-backends.js';
import type { TunnelSpec, TunnelStatus } from '../../crds/definitions/tunnel.js';
import { ConditionType, getCondition, setCondition } from '../../runtime/conditions.js';
import type { ReconcileOutcome, ReconcileRequest } from '../../runtime/controller.js';
import type { EventReporter } from '../../runtime/events.js';
import { getIfExists } from '../../runtime/get-if-exists.js';
import type { InformerReader } from '../../runtime/informer.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import type { StatusWriter } from '../../runtime/status-writer.js';
import type { SecretObject } from '../shared/secret-values.js';
import { TOKEN_KEY, type TunnelCredentialObject, tokenSecretName } from '../tunnel-credential/sync.js';
import type { AgentState, DesiredAgent, TunnelAgents } from './agents.js';
import type { TunnelEdgeSettings } from './settings.js';
import {
  type EndpointSliceObject,
  resolveUpstream,
  SERVICE_NAME_LABEL,
  type ServiceObject,
} from './upstream.js';

export type TunnelObject = KubernetesObject & { spec: TunnelSpec; status?: TunnelStatus };

/**
 * What the reconcile reads comes from informer caches: it makes no API call but the status write,
 * and a GET of a token Secret the Secret cache does not hold yet (it caches only Secrets that
 * Tunnels name, from their first change after being named).
 */
export interface TunnelDeps {
  client: KubeResources<TunnelObject>;
  tunnels: InformerReader<TunnelObject>;
  credentials: InformerReader<TunnelCredentialObject>;
  secrets: InformerReader<SecretObject>;
  /** Reads a token Secret the cache misses. */
  secretClient: KubeResources<SecretObject>;
  services: InformerReader<ServiceObject>;
  slices: InformerReader<EndpointSliceObject>;
  statusWriter: StatusWriter;
  events: EventReporter;
  agents: TunnelAgents;
  edge: TunnelEdgeSettings;
  /** The sessions the other replicas' agents hold, by Tunnel key; absent with one replica. */
  peers?: { peerValues(key: string): string[] };
}

/** `status.sessionIds` holds at most this many (the CRD's limit): the oldest. */
const MAX_SESSION_IDS = 16;

/** Why a Tunnel cannot run its agent now: Ready False with this reason. */
interface Blocked {
  ready: false;
  reason: 'TokenUnavailable' | 'ServiceNotFound' | 'NoReadyEndpoints' | 'EdgeNotConfigured' | 'InvalidSpec';
  message: string;
}

type Plan = { ready: true; desired: DesiredAgent; attempt: string } | Blocked;

type ReadyFields = { status: 'True' | 'False'; reason: string; message: string };

/**
 * One Tunnel, in every replica: resolve its token, forward target and edge from the caches and
 * bring this replica's agent in line (`TunnelAgents.ensure`). Anything that keeps the agent from
 * running stops it; a deleted Tunnel's agent is stopped (no finalizer: nothing outlives the agent,
 * its sessions end with its connections).
 *
 * Only the leader (`leading`) writes, and what it writes describes the Tunnel as a whole:
 * `status.sessionIds` are the sessions of its agents in every replica (its own, and those the
 * other replicas report: `deps.peers`), oldest first, `status.id` the oldest; Ready True `Online`
 * while any is online, else False from this replica's agent (`Connecting`, `Refused` with the
 * edge's reason, `Stopped`) or from what blocks it (`TokenUnavailable`, `ServiceNotFound`,
 * `NoReadyEndpoints`, `EdgeNotConfigured`, `InvalidSpec`: every replica reads the same caches).
 */
export async function reconcileTunnel(
  deps: TunnelDeps,
  request: ReconcileRequest,
  leading = true,
): Promise<ReconcileOutcome | undefined> {
  const tunnel = deps.tunnels.cache.get(request.namespace, request.name);
  if (!tunnel || tunnel.metadata?.deletionTimestamp) {
    deps.agents.stop(request.key);
    return undefined;
  }
  const plan = await planAgent(deps, tunnel, request.key);
  if (!plan.ready) {
    deps.agents.stop(request.key);
    if (leading) {
      const ready: ReadyFields = { status: 'False', reason: plan.reason, message: plan.message };
      await writeTunnelStatus(deps, tunnel, ready, []);
    }
    return undefined;
  }
  const state = deps.agents.ensure(request.key, plan.desired, plan.attempt);
  // Shutting down: the agents are stopping, and nothing more is written.
  if (!state) return undefined;
  const retryInMs = deps.agents.retryInMs(request.key);
  const outcome = retryInMs === undefined ? undefined : { requeueAfterMs: retryInMs + 1000 };
  if (!leading) return outcome;
  const own = state.phase === 'online' ? state.sessionIds : [];
  const sessionIds = [...new Set([...own, ...(deps.peers?.peerValues(request.key) ?? [])])]
    .sort()
    .slice(0, MAX_SESSION_IDS);
  const target = formatTarget(plan.desired.forward);
  const ready = readyOf(state, sessionIds, target, plan.desired.authtoken);
  await writeTunnelStatus(deps, tunnel, ready, sessionIds, target);
  return outcome;
}

async function planAgent(deps: TunnelDeps, tunnel: TunnelObject, key: string): Promise<Plan> {
  const { spec } = tunnel;
  const namespace = tunnel.metadata?.namespace;
  const labels = tunnelGroupLabels.safeParse(spec.labels);
  if (!labels.success) {
    const issue = labels.error.issues[0];
    const where = ['spec.labels', ...(issue?.path ?? [])].join('.');
    return blocked('InvalidSpec', `${where}: ${issue?.message ?? 'invalid'}`);
  }
  const edgeAddr = spec.edgeAddr ?? deps.edge.addr;
  if (!edgeAddr) {
    return blocked(
      'EdgeNotConfigured',
      'no edge to dial: start the operator with --edge-addr, or set spec.edgeAddr',
    );
  }
  try {
    parseEdgeAddr(edgeAddr);
  } catch {
    return blocked('InvalidSpec', `spec.edgeAddr: '${edgeAddr}' is not host:port`);
  }
  const token = await resolveToken(deps, tunnel);
  if (!token.ready) return token;
  const forward = resolveForward(deps, tunnel, namespace, key);
  if ('ready' in forward) return forward;
  const desired: DesiredAgent = {
    edgeAddr,
    authtoken: token.token,
    labels: labels.data,
    forward,
    ...(spec.metadata === undefined ? {} : { metadata: spec.metadata }),
    ...(deps.edge.serverName === undefined ? {} : { serverName: deps.edge.serverName }),
  };
  return { ready: true, desired, attempt: token.attempt };
}

/** The authtoken: the token Secret of the named TunnelCredential, or the named Secret key. */
async function resolveToken(
  deps: TunnelDeps,
  tunnel: TunnelObject,
): Promise<{ ready: true; token: string; attempt: string } | Blocked> {
  const namespace = tunnel.metadata?.namespace;
  const { credentialRef, tokenSecretRef } = tunnel.spec;
  if (credentialRef) {
    const credential = deps.credentials.cache.get(namespace, credentialRef.name);
    const what = `spec.credentialRef: TunnelCredential ${credentialRef.name}`;
    if (!credential) return blocked('TokenUnavailable', `${what} does not exist`);
    if (credential.metadata?.deletionTimestamp)
      return blocked('TokenUnavailable', `${what} is being deleted`);
    // The Secret the credential controller writes (status says which once it has): key `token`.
    const secretName = credential.status?.tokenSecretName ?? tokenSecretName(credential);
    const token = await secretText(deps, namespace, secretName, TOKEN_KEY);
    if (!token) {
      return blocked('TokenUnavailable', `${what} has no token yet (Secret ${secretName}, key ${TOKEN_KEY})`);
    }
    // A refused agent is dialed again at once when the credential changes (its ACL, say).
    return { ready: true, token, attempt: String(credential.metadata?.generation ?? '') };
  }
  if (tokenSecretRef) {
    const token = await secretText(deps, namespace, tokenSecretRef.name, tokenSecretRef.key);
    if (!token) {
      return blocked(
        'TokenUnavailable',
        `spec.tokenSecretRef: Secret ${tokenSecretRef.name} does not exist or has no (or an empty) key ${tokenSecretRef.key}`,
      );
    }
    return { ready: true, token, attempt: '' };
  }
  return blocked('InvalidSpec', 'one of spec.credentialRef and spec.tokenSecretRef must be set');
}

async function secretText(
  deps: TunnelDeps,
  namespace: string | undefined,
  name: string,
  key: string,
): Promise<string | undefined> {
  const secret =
    deps.secrets.cache.get(namespace, name) ??
    (await getIfExists(deps.secretClient, namespace, name, `reading Secret ${name}`));
  const encoded = secret?.data?.[key];
  const text = encoded ? Buffer.from(encoded, 'base64').toString('utf8').trim() : '';
  return text === '' ? undefined : text;
}

function resolveForward(
  deps: TunnelDeps,
  tunnel: TunnelObject,
  namespace: string | undefined,
  key: string,
): ForwardTarget | Blocked {
  const { forward } = tunnel.spec;
  if (forward.url !== undefined) {
    try {
      return parseForwardTarget(forward.url);
    } catch (error) {
      const message = error instanceof Error ? error.message.replace(/^--forward: /, '') : String(error);
      return blocked('InvalidSpec', `spec.forward.url: ${message}`);
    }
  }
  const ref = forward.service;
  if (!ref) return blocked('InvalidSpec', 'one of spec.forward.service and spec.forward.url must be set');
  const slices = deps.slices.cache
    .list(namespace)
    .filter((slice) => slice.metadata?.labels?.[SERVICE_NAME_LABEL] === ref.name);
  const upstream = resolveUpstream(
    deps.services.cache.get(namespace, ref.name),
    slices,
    ref,
    deps.agents.forwardOf(key),
  );
  if (!upstream.ready) return blocked(upstream.reason, `spec.forward.service: ${upstream.message}`);
  return { protocol: forward.protocol ?? 'tcp', host: upstream.host, port: upstream.port };
}

function blocked(reason: Blocked['reason'], message: string): Blocked {
  return { ready: false, reason, message };
}

/**
 * Ready: Online while any replica's agent holds a session (`sessionIds`), else from this replica's
 * agent. The token never reaches a message.
 */
function readyOf(state: AgentState, sessionIds: string[], target: string, token: string): ReadyFields {
  if (state.phase === 'online' || sessionIds.length > 0) {
    const sessions = sessionIds.length === 1 ? 'session' : 'sessions';
    return {
      status: 'True',
      reason: 'Online',
      message: `${sessions} ${sessionIds.join(', ')} online at ${state.edgeAddr}, carrying to ${target}`,
    };
  }
  switch (state.phase) {
    case 'connecting':
      return {
        status: 'False',
        reason: 'Connecting',
        message: `dialing the edge at ${state.edgeAddr}${state.lastError ? `; last attempt: ${state.lastError}` : ''}`,
      };
    case 'ended':
      return {
        status: 'False',
        reason: state.reason,
        message: `${state.message.replaceAll(token, '[redacted]')} (dialed again when the Tunnel, its credential or token changes, or after a backoff from 2 s up to 5 minutes)`,
      };
  }
}

const formatTarget = (target: ForwardTarget) =>
  `${target.protocol}://${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;

/**
 * One status write (none when nothing changed), and an Event when Ready's reason turns or the
 * oldest session (`status.id`) changes.
 */
async function writeTunnelStatus(
  deps: TunnelDeps,
  tunnel: TunnelObject,
  ready: ReadyFields,
  sessionIds: string[],
  target?: string,
): Promise<void> {
  const generation = tunnel.metadata?.generation;
  const sessionId = sessionIds[0];
  const before = getCondition(tunnel.status?.conditions, ConditionType.Ready);
  await deps.statusWriter.write<TunnelStatus, TunnelObject>(deps.client, tunnel, (current) => {
    const { id: _id, sessionIds: _sessions, forwardTarget: _target, ...rest } = current.status ?? {};
    return {
      ...rest,
      ...(sessionId === undefined ? {} : { id: sessionId, sessionIds }),
      ...(target === undefined ? {} : { forwardTarget: target }),
      ...(generation === undefined ? {} : { observedGeneration: generation }),
      conditions: setCondition(
        current.status?.conditions,
        { type: ConditionType.Ready, ...ready },
        { observedGeneration: generation },
      ),
    };
  });
  const turned =
    before?.reason !== ready.reason || (sessionId !== undefined && tunnel.status?.id !== sessionId);
  if (!turned) return;
  if (ready.reason === 'Online') await deps.events.normal(tunnel, 'SessionOnline', ready.message);
  else if (ready.reason === 'Refused') await deps.events.warning(tunnel, 'Refused', ready.message);
}
