import type { KubernetesObject } from '@kubernetes/client-node';
import { isConditionTrue } from '../../runtime/conditions.js';
import type { Informer } from '../../runtime/informer.js';
import type { ManagedObject, Resolution } from '../managed-resource.js';

export type ReferencedObject = KubernetesObject & { status?: ManagedObject['status'] };

/** Server ids of the objects an edge names: IP policies and certificate authorities. */
export interface ResolvedEdge {
  ipPolicyIds: string[] | undefined;
  certificateAuthorityIds: string[] | undefined;
}

/** The informers of the kinds edges may name. */
export interface EdgeReferenceInformers {
  ipPolicies: Informer<ReferencedObject>;
  certificateAuthorities: Informer<ReferencedObject>;
}

/** Ids of the named objects when every one is Ready, else the first that is not. */
export function resolveRefs(
  informer: Informer<ReferencedObject>,
  namespace: string | undefined,
  refs: readonly { name: string }[] | undefined,
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
  const policies = resolveRefs(
    informers.ipPolicies,
    namespace,
    spec.ipRestriction?.ipPolicyRefs,
    'spec.ipRestriction.ipPolicyRefs',
    'IPPolicy',
  );
  if ('notReady' in policies)
    return { ready: false, reason: 'ReferenceNotReady', message: policies.notReady };
  const cas = resolveRefs(
    informers.certificateAuthorities,
    namespace,
    spec.mutualTls?.certificateAuthorityRefs,
    'spec.mutualTls.certificateAuthorityRefs',
    'CertificateAuthority',
  );
  if ('notReady' in cas) return { ready: false, reason: 'ReferenceNotReady', message: cas.notReady };
  return { ready: true, value: { ipPolicyIds: policies.ids, certificateAuthorityIds: cas.ids } };
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
