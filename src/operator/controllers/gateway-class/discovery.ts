import type { KubeApi } from '../../runtime/kube-api.js';
import { describeKubeError, statusCodeOf } from '../../runtime/kube-errors.js';
import type { Logger } from '../../runtime/logger.js';
import { resourcePath } from '../../runtime/resource-types.js';
import { BUNDLE_VERSION_ANNOTATION, GATEWAY_CLASS, GATEWAY_CLASS_CRD } from './status.js';

/** What the operator found of the Gateway API when it started. */
export interface GatewayApiDiscovery {
  /** gatewayclasses.gateway.networking.k8s.io/v1 is served and the operator may list it. */
  served: boolean;
  /** The CRD's `gateway.networking.k8s.io/bundle-version`, when it could be read. */
  bundleVersion?: string;
}

/**
 * Asks the apiserver once, at start, whether GatewayClasses (v1) can be watched: a list of at most
 * one. 404: the CRDs are not installed (or not v1); 403: RBAC does not grant it (e.g. the chart's
 * per-namespace Roles: GatewayClasses are cluster-scoped). Either way the GatewayClass controller
 * is left out, with one info line, and the operator runs without it: the CRDs must be there before
 * the operator starts (or it is restarted after they are installed). Other failures throw (the
 * process exits and is restarted). The bundle version comes from the CRD, if it may be read.
 */
export async function discoverGatewayApi(api: KubeApi, log: Logger): Promise<GatewayApiDiscovery> {
  try {
    await api.request('GET', resourcePath(GATEWAY_CLASS), { query: { limit: 1 } });
  } catch (error) {
    const code = statusCodeOf(error);
    if (code !== 404 && code !== 403) throw new Error('probing the Gateway API failed', { cause: error });
    log.info(
      { reason: describeKubeError(error) },
      code === 404
        ? 'Gateway API: gatewayclasses.gateway.networking.k8s.io/v1 is not served; the GatewayClass controller is off (install the CRDs, then restart the operator)'
        : 'Gateway API: not allowed to list GatewayClasses; the GatewayClass controller is off',
    );
    return { served: false };
  }
  let bundleVersion: string | undefined;
  try {
    const crd = await api.request<{ metadata?: { annotations?: Record<string, string> } }>(
      'GET',
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${GATEWAY_CLASS_CRD}`,
    );
    bundleVersion = crd.metadata?.annotations?.[BUNDLE_VERSION_ANNOTATION];
  } catch (error) {
    log.warn(
      { reason: describeKubeError(error) },
      'Gateway API: could not read the GatewayClass CRD; its bundle version is unknown',
    );
  }
  log.info({ bundleVersion }, 'Gateway API: GatewayClass controller on');
  return { served: true, bundleVersion };
}
