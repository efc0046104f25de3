import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { TlsEdgeModules } from '../../../client/resources.js';
import type { TlsEdge } from '../../../schemas/tls-edges.js';
import type { TlsEdgeSpec, TlsEdgeStatus } from '../../crds/kinds/tls-edge.js';
import { isConditionTrue } from '../../runtime/conditions.js';
import type { Informer } from '../../runtime/informer.js';
import { sameJson } from '../../runtime/status-writer.js';
import {
  changedFields,
  isApiNotFound,
  type ManagedObject,
  type Resolution,
  type ResourceSync,
  SyncProgressError,
} from '../managed-resource.js';

export type TlsEdgeObject = ManagedObject & { spec: TlsEdgeSpec; status?: TlsEdgeStatus };

type ReferencedObject = KubernetesObject & { status?: ManagedObject['status'] };

/** Server ids of the objects the edge names: IP policies and certificate authorities. */
export interface ResolvedEdge {
  ipPolicyIds: string[] | undefined;
  certificateAuthorityIds: string[] | undefined;
}

/** The edge with the tunnel-group backend the operator keeps for `backend.labels` (if any). */
export type RemoteTlsEdge = TlsEdge & { keptBackendId?: string };

type ModuleName = keyof TlsEdgeModules;
type ModuleInputs = { [N in ModuleName]: TlsEdgeModules[N][0] | undefined };

export interface TlsEdgeDeps {
  api: EdgewardClient;
  ipPolicies: Informer<ReferencedObject>;
  certificateAuthorities: Informer<ReferencedObject>;
}

/** Ids of named objects when every one is Ready, else the first that is not. */
function resolveRefs(
  informer: Informer<ReferencedObject>,
  namespace: string | undefined,
  refs: { name: string }[] | undefined,
  field: string,
  kind: string,
): { ids: string[] | undefined } | { notReady: string } {
  if (!refs) return { ids: undefined };
  const ids: string[] = [];
  for (const { name } of refs) {
    const object = informer.cache.get(namespace, name);
    const id = object?.status?.id;
    if (!id || !isConditionTrue(object.status?.conditions, 'Ready')) {
      return { notReady: `${field}: ${kind} ${name} is not Ready` };
    }
    ids.push(id);
  }
  return { ids };
}

/** The modules as the API takes them (ids), from the spec; undefined = not configured. */
function desiredModules(
  object: TlsEdgeObject,
  resolved: ResolvedEdge,
  backendId: string | undefined,
): ModuleInputs {
  const { spec } = object;
  const tls = spec.tlsTermination;
  return {
    backend:
      spec.backend && backendId
        ? { enabled: spec.backend.enabled ?? true, backend_id: backendId }
        : undefined,
    ip_restriction: spec.ipRestriction
      ? {
          enabled: spec.ipRestriction.enabled ?? true,
          ip_policy_ids: resolved.ipPolicyIds ?? spec.ipRestriction.ipPolicyIds ?? [],
        }
      : undefined,
    mutual_tls: spec.mutualTls
      ? {
          enabled: spec.mutualTls.enabled ?? true,
          certificate_authority_ids:
            resolved.certificateAuthorityIds ?? spec.mutualTls.certificateAuthorityIds ?? [],
        }
      : undefined,
    tls_termination: tls
      ? {
          enabled: tls.enabled ?? true,
          terminate_at: tls.terminateAt ?? 'edge',
          ...(tls.minVersion ? { min_version: tls.minVersion } : {}),
        }
      : undefined,
    policy: spec.policy
      ? {
          enabled: spec.policy.enabled ?? true,
          inbound: (spec.policy.inbound ?? []).map((rule) => ({
            name: rule.name,
            expressions: rule.expressions ?? [],
            actions: rule.actions.map((action) => ({ type: action.type, config: action.config ?? null })),
          })),
          outbound: spec.policy.outbound
            ? spec.policy.outbound.map((rule) => ({
                name: rule.name,
                expressions: rule.expressions ?? [],
                actions: rule.actions.map((action) => ({ type: action.type, config: action.config ?? null })),
              }))
            : null,
        }
      : undefined,
  };
}

/** The server's modules in the API's write form, comparable with `desiredModules`. */
function currentModules(edge: TlsEdge, desired: ModuleInputs): ModuleInputs {
  const tls = edge.tls_termination;
  return {
    backend: edge.backend
      ? { enabled: edge.backend.enabled, backend_id: edge.backend.backend.id }
      : undefined,
    ip_restriction: edge.ip_restriction
      ? {
          enabled: edge.ip_restriction.enabled,
          ip_policy_ids: edge.ip_restriction.ip_policies.map((p) => p.id),
        }
      : undefined,
    mutual_tls: edge.mutual_tls
      ? {
          enabled: edge.mutual_tls.enabled,
          certificate_authority_ids: edge.mutual_tls.certificate_authorities.map((ca) => ca.id),
        }
      : undefined,
    tls_termination: tls
      ? {
          enabled: tls.enabled,
          terminate_at: tls.terminate_at,
          // An unset minimum is the server's default: only a minimum the spec names is compared.
          ...(desired.tls_termination?.min_version !== undefined && tls.min_version
            ? { min_version: tls.min_version as '1.0' }
            : {}),
        }
      : undefined,
    policy: edge.policy
      ? {
          enabled: edge.policy.enabled,
          inbound: edge.policy.inbound,
          outbound: edge.policy.outbound,
        }
      : undefined,
  };
}

/**
 * TLSEdge -> `/edges/tls` with its modules. `backend.labels` makes the operator keep a
 * tunnel-group backend of its own (created with an Idempotency-Key, relabelled in place, deleted
 * with the edge); `ipPolicyRefs` and `certificateAuthorityRefs` wait until those objects are Ready.
 * Changed top-level fields go in one PATCH; a module the spec drops is deleted.
 */
export function tlsEdgeSync(deps: TlsEdgeDeps): ResourceSync<TlsEdgeObject, ResolvedEdge, RemoteTlsEdge> {
  const { api } = deps;

  /** The backend id the edge should point at, creating or relabelling the kept backend. */
  async function ensureBackend(object: TlsEdgeObject, idempotencyKey: string): Promise<string | undefined> {
    const backend = object.spec.backend;
    if (!backend) return undefined;
    if (backend.backendId) return backend.backendId;
    const labels = backend.labels ?? {};
    const kept = object.status?.backendId;
    if (kept) {
      try {
        const current = await api.tunnelGroupBackends.get(kept);
        if (!sameJson(current.labels, labels)) await api.tunnelGroupBackends.update(kept, { labels });
        return kept;
      } catch (error) {
        if (!isApiNotFound(error)) throw error;
      }
    }
    const description = `TLSEdge ${object.metadata?.namespace}/${object.metadata?.name}`;
    const created = await api.tunnelGroupBackends.create({ description, labels }, { idempotencyKey });
    return created.id;
  }

  async function dropKeptBackend(object: TlsEdgeObject, keep: string | undefined): Promise<void> {
    const kept = object.status?.backendId;
    if (!kept || kept === keep) return;
    try {
      await api.tunnelGroupBackends.delete(kept);
    } catch (error) {
      if (!isApiNotFound(error)) throw error;
    }
  }

  const keptId = (object: TlsEdgeObject, backendId: string | undefined) =>
    object.spec.backend?.labels ? backendId : undefined;

  /**
   * Runs the edge write after `ensureBackend`; if it fails, a backend made just now is recorded in
   * status with the failure, so the retry relabels that one instead of making another, and
   * deleting the CR deletes it.
   */
  async function rememberingBackend<V>(
    object: TlsEdgeObject,
    kept: string | undefined,
    write: () => Promise<V>,
  ): Promise<V> {
    try {
      return await write();
    } catch (error) {
      if (kept && kept !== object.status?.backendId) throw new SyncProgressError({ backendId: kept }, error);
      throw error;
    }
  }

  return {
    async resolve(object): Promise<Resolution<ResolvedEdge>> {
      const namespace = object.metadata?.namespace;
      const policies = resolveRefs(
        deps.ipPolicies,
        namespace,
        object.spec.ipRestriction?.ipPolicyRefs,
        'spec.ipRestriction.ipPolicyRefs',
        'IPPolicy',
      );
      if ('notReady' in policies)
        return { ready: false, reason: 'ReferenceNotReady', message: policies.notReady };
      const cas = resolveRefs(
        deps.certificateAuthorities,
        namespace,
        object.spec.mutualTls?.certificateAuthorityRefs,
        'spec.mutualTls.certificateAuthorityRefs',
        'CertificateAuthority',
      );
      if ('notReady' in cas) return { ready: false, reason: 'ReferenceNotReady', message: cas.notReady };
      return { ready: true, value: { ipPolicyIds: policies.ids, certificateAuthorityIds: cas.ids } };
    },
    get: (id) => api.tlsEdges.get(id),
    async create(object, resolved, options) {
      const backendId = await ensureBackend(object, `${options.idempotencyKey}-backend`);
      const modules = desiredModules(object, resolved, backendId);
      const body = {
        description: object.spec.description ?? '',
        metadata: object.spec.metadata ?? '',
        hostports: object.spec.hostports ?? [],
        ...Object.fromEntries(Object.entries(modules).filter(([, value]) => value !== undefined)),
      };
      const kept = keptId(object, backendId);
      const edge = await rememberingBackend(object, kept, () => api.tlsEdges.create(body, options));
      return { ...edge, keptBackendId: kept };
    },
    async update(object, resolved, remote) {
      const key = `${object.metadata?.uid}-${object.metadata?.generation}-backend`;
      const backendId = await ensureBackend(object, key);
      const desired = desiredModules(object, resolved, backendId);
      const current = currentModules(remote, desired);
      const patch: Record<string, unknown> = changedFields(
        {
          description: object.spec.description ?? '',
          metadata: object.spec.metadata ?? '',
          hostports: object.spec.hostports ?? [],
        },
        remote,
      );
      const dropped: ModuleName[] = [];
      for (const name of Object.keys(desired) as ModuleName[]) {
        const want = desired[name];
        if (want === undefined) {
          if (current[name] !== undefined) dropped.push(name);
        } else if (!sameJson(want, current[name])) {
          patch[name] = want;
        }
      }
      const kept = keptId(object, backendId);
      const edge = await rememberingBackend(object, kept, async () => {
        let written: TlsEdge = remote;
        if (Object.keys(patch).length > 0) written = await api.tlsEdges.update(remote.id, patch);
        for (const name of dropped) await api.tlsEdges.deleteModule(remote.id, name);
        if (dropped.length > 0) written = await api.tlsEdges.get(remote.id);
        return written;
      });
      await dropKeptBackend(object, kept);
      const changed = Object.keys(patch).length > 0 || dropped.length > 0;
      return { remote: { ...edge, keptBackendId: kept }, changed };
    },
    delete: (id) => api.tlsEdges.delete(id),
    deleteKept: (object) => dropKeptBackend(object, undefined),
    statusFields: (_object, remote) => ({ hostports: remote.hostports, backendId: remote.keptBackendId }),
  };
}
