import type { InformerReader } from '../../../runtime/informer.js';
import type { Resolution } from '../../managed/managed-resource.js';
import { type ReferencedObject, resolveReadyIds } from '../ready-references.js';

/** Server ids of the objects an edge names: IP policies and certificate authorities. */
export interface ResolvedEdge {
  ipPolicyIds: string[] | undefined;
  certificateAuthorityIds: string[] | undefined;
}

/** The informers of the kinds edges may name. */
export interface EdgeReferenceInformers {
  ipPolicies: InformerReader<ReferencedObject>;
  certificateAuthorities: InformerReader<ReferencedObject>;
}

/** What an edge spec may name: `ipRestriction.ipPolicyRefs`, `mutualTls.certificateAuthorityRefs`. */
export interface EdgeReferencingSpec {
  ipRestriction?: { ipPolicyRefs?: { name: string }[] };
  mutualTls?: { certificateAuthorityRefs?: { name: string }[] };
}

/** Resolves an edge's (or route's) references; ReferenceNotReady names the first one not Ready. */
export function resolveEdgeReferences(
  informers: EdgeReferenceInformers,
  namespace: string | undefined,
  spec: EdgeReferencingSpec,
): Resolution<ResolvedEdge> {
  const policies = resolveReadyIds(
    informers.ipPolicies,
    namespace,
    spec.ipRestriction?.ipPolicyRefs,
    'spec.ipRestriction.ipPolicyRefs',
    'IPPolicy',
  );
  if (!policies.ready) return policies;
  const cas = resolveReadyIds(
    informers.certificateAuthorities,
    namespace,
    spec.mutualTls?.certificateAuthorityRefs,
    'spec.mutualTls.certificateAuthorityRefs',
    'CertificateAuthority',
  );
  if (!cas.ready) return cas;
  return { ready: true, value: { ipPolicyIds: policies.value, certificateAuthorityIds: cas.value } };
}

/** The reference-index entries of an edge spec (what its watches map back from). */
export function edgeReferences(spec: EdgeReferencingSpec): { kind: string; name: string }[] {
  return [
    ...(spec.ipRestriction?.ipPolicyRefs ?? []).map(({ name }) => ({ kind: 'IPPolicy', name })),
    ...(spec.mutualTls?.certificateAuthorityRefs ?? []).map(({ name }) => ({
      kind: 'CertificateAuthority',
      name,
    })),
  ];
}
