import {
  type BackendModule,
  DEFAULT_MIN_TLS_VERSION,
  type IpRestrictionModule,
  type MutualTlsModule,
  type PolicyModule,
  type TlsTerminationModule,
} from '../../../../schemas/edge-modules.js';
import type {
  BackendModule as BackendSpec,
  IpRestrictionModule as IpRestrictionSpec,
  MutualTlsModule as MutualTlsSpec,
  PolicyModule as PolicySpec,
  TlsTerminationAtEdgeModule as TlsTerminationAtEdgeSpec,
  TlsTerminationModule as TlsTerminationSpec,
} from '../../../crds/modules.js';
import type { ResolvedEdge } from './references.js';

/**
 * One module of an edge or route, both ways: `desired` is the API's write form built from the
 * spec (undefined = not configured), `current` the server's read form turned into that write
 * form, so the two compare with `sameJson` and a difference is exactly what to PUT or PATCH.
 */
export interface ModuleAdapter<Spec, Read> {
  desired(spec: Spec | undefined, context: DesiredContext): unknown;
  current(read: Read | null | undefined, desired: unknown): unknown;
}

/** What `desired` needs besides the spec: resolved reference ids and the backend in use. */
export interface DesiredContext {
  resolved: ResolvedEdge;
  backendId: string | undefined;
}

export const backendAdapter: ModuleAdapter<BackendSpec, BackendModule> = {
  desired: (spec, { backendId }) =>
    spec && backendId ? { enabled: spec.enabled ?? true, backend_id: backendId } : undefined,
  current: (read) => (read ? { enabled: read.enabled, backend_id: read.backend.id } : undefined),
};

export const ipRestrictionAdapter: ModuleAdapter<IpRestrictionSpec, IpRestrictionModule> = {
  desired: (spec, { resolved }) =>
    spec
      ? { enabled: spec.enabled ?? true, ip_policy_ids: resolved.ipPolicyIds ?? spec.ipPolicyIds ?? [] }
      : undefined,
  current: (read) =>
    read ? { enabled: read.enabled, ip_policy_ids: read.ip_policies.map((policy) => policy.id) } : undefined,
};

export const mutualTlsAdapter: ModuleAdapter<MutualTlsSpec, MutualTlsModule> = {
  desired: (spec, { resolved }) =>
    spec
      ? {
          enabled: spec.enabled ?? true,
          certificate_authority_ids: resolved.certificateAuthorityIds ?? spec.certificateAuthorityIds ?? [],
        }
      : undefined,
  current: (read) =>
    read
      ? { enabled: read.enabled, certificate_authority_ids: read.certificate_authorities.map((ca) => ca.id) }
      : undefined,
};

/**
 * The server's minimum version, in the write form. A spec without one means the server's default:
 * the server showing the default then matches it, and any other minimum (one the spec used to
 * set) shows as a difference, so the module is written again without it.
 */
function minVersionOf(read: TlsTerminationModule, desired: unknown): { min_version?: string } {
  const wanted = (desired as { min_version?: string } | undefined)?.min_version;
  if (!read.min_version) return {};
  if (wanted === undefined && read.min_version === DEFAULT_MIN_TLS_VERSION) return {};
  return { min_version: read.min_version };
}

/** TLS edges: terminate at the edge or upstream. */
export const tlsTerminationAdapter: ModuleAdapter<TlsTerminationSpec, TlsTerminationModule> = {
  desired: (spec) =>
    spec
      ? {
          enabled: spec.enabled ?? true,
          terminate_at: spec.terminateAt ?? 'edge',
          ...(spec.minVersion ? { min_version: spec.minVersion } : {}),
        }
      : undefined,
  current: (read, desired) =>
    read
      ? { enabled: read.enabled, terminate_at: read.terminate_at, ...minVersionOf(read, desired) }
      : undefined,
};

/** HTTPS edges always terminate at the edge: only `enabled` and the minimum version are written. */
export const tlsTerminationAtEdgeAdapter: ModuleAdapter<TlsTerminationAtEdgeSpec, TlsTerminationModule> = {
  desired: (spec) =>
    spec
      ? { enabled: spec.enabled ?? true, ...(spec.minVersion ? { min_version: spec.minVersion } : {}) }
      : undefined,
  current: (read, desired) => (read ? { enabled: read.enabled, ...minVersionOf(read, desired) } : undefined),
};

type PolicyRuleSpec = NonNullable<PolicySpec['inbound']>[number];

const ruleToApi = (rule: PolicyRuleSpec) => ({
  name: rule.name,
  expressions: rule.expressions ?? [],
  actions: rule.actions.map((action) => ({ type: action.type, config: action.config ?? null })),
});

export const policyAdapter: ModuleAdapter<PolicySpec, PolicyModule> = {
  desired: (spec) =>
    spec
      ? {
          enabled: spec.enabled ?? true,
          inbound: (spec.inbound ?? []).map(ruleToApi),
          outbound: spec.outbound ? spec.outbound.map(ruleToApi) : null,
        }
      : undefined,
  current: (read) =>
    read ? { enabled: read.enabled, inbound: read.inbound, outbound: read.outbound } : undefined,
};
