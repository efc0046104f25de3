import type { KubernetesObject } from '@kubernetes/client-node';
import { type Condition, setCondition } from '../../runtime/conditions.js';
import type { ResourceKind } from '../../runtime/resource-types.js';

/** The `spec.controllerName` of the GatewayClasses edgeward implements. */
export const GATEWAY_CONTROLLER_NAME = 'edgeward.dev/gateway-controller';

export const GATEWAY_CLASS: ResourceKind = {
  group: 'gateway.networking.k8s.io',
  version: 'v1',
  kind: 'GatewayClass',
  plural: 'gatewayclasses',
  namespaced: false,
};

/** The CRD whose `gateway.networking.k8s.io/bundle-version` annotation says which release is installed. */
export const GATEWAY_CLASS_CRD = 'gatewayclasses.gateway.networking.k8s.io';
export const BUNDLE_VERSION_ANNOTATION = 'gateway.networking.k8s.io/bundle-version';

/**
 * The Gateway API releases whose CRDs this controller knows (the minor: every patch of it). Built
 * and tested against v1.6.3 (TOOL_VERSIONS.gatewayApi).
 */
export const SUPPORTED_BUNDLE_MINORS = ['v1.6'] as const;

export function isSupportedBundleVersion(version: string | undefined): boolean {
  const minor = /^(v\d+\.\d+)\.\d+$/.exec(version ?? '')?.[1];
  return minor !== undefined && (SUPPORTED_BUNDLE_MINORS as readonly string[]).includes(minor);
}

export type GatewayClassObject = KubernetesObject & {
  spec?: { controllerName?: string; description?: string; parametersRef?: unknown };
  status?: { conditions?: Condition[]; supportedFeatures?: { name: string }[] } & Record<string, unknown>;
};

export const isEdgewardGatewayClass = (object: GatewayClassObject) =>
  object.spec?.controllerName === GATEWAY_CONTROLLER_NAME;

/**
 * The status of one of our GatewayClasses (apis/v1/gatewayclass_types.go of v1.6): `Accepted`
 * True (reason `Accepted`), and `SupportedVersion`, which must be set with it: True when the
 * installed CRDs' bundle version is one of SUPPORTED_BUNDLE_MINORS, else False
 * `UnsupportedVersion` (best-effort support: the class stays Accepted). Both carry the class's
 * generation. Conditions of other types are kept as they are (the spec's merge rules); a condition
 * whose observedGeneration is newer than this copy's generation means this copy is stale: the
 * status is returned unchanged (the newer copy's event reconciles again).
 */
export function gatewayClassStatus(
  current: GatewayClassObject,
  bundleVersion: string | undefined,
): GatewayClassObject['status'] {
  const generation = current.metadata?.generation;
  const conditions = current.status?.conditions;
  const ours = ['Accepted', 'SupportedVersion'];
  if (
    generation !== undefined &&
    conditions?.some((c) => ours.includes(c.type) && (c.observedGeneration ?? 0) > generation)
  ) {
    return current.status;
  }
  const stamp = { observedGeneration: generation };
  let next = setCondition(
    conditions,
    { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Accepted by edgeward' },
    stamp,
  );
  next = setCondition(
    next,
    isSupportedBundleVersion(bundleVersion)
      ? {
          type: 'SupportedVersion',
          status: 'True',
          reason: 'SupportedVersion',
          message: `Gateway API ${bundleVersion} is supported`,
        }
      : {
          type: 'SupportedVersion',
          status: 'False',
          reason: 'UnsupportedVersion',
          message: `the installed Gateway API CRDs are ${bundleVersion ? `bundle version ${bundleVersion}` : 'of an unknown bundle version'}; edgeward supports ${SUPPORTED_BUNDLE_MINORS.map((minor) => `${minor}.x`).join(', ')} (best effort otherwise)`,
        },
    stamp,
  );
  return { ...current.status, conditions: next };
}
