import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import type { GatewayApiDiscovery } from './discovery.js';
import {
  GATEWAY_CLASS,
  type GatewayClassObject,
  gatewayClassStatus,
  isEdgewardGatewayClass,
} from './status.js';

/**
 * GatewayClass (gateway.networking.k8s.io/v1, cluster-scoped) whose `spec.controllerName` is
 * `edgeward.dev/gateway-controller` -> its status: `Accepted` and `SupportedVersion` for its
 * generation (status.ts). A class naming another controller is never written. Runs on the leader
 * only, like every controller that is not `everyReplica`. Registered only when the operator found
 * GatewayClasses served at start (discovery.ts); Gateways and routes come next.
 */
export function registerGatewayClass(
  manager: Manager,
  _api: EdgewardClient,
  settings: { gatewayApi?: GatewayApiDiscovery } = {},
): RegisteredController<GatewayClassObject> | undefined {
  const discovery = settings.gatewayApi;
  if (!discovery?.served) return undefined;
  const classes = manager.resources<GatewayClassObject>(GATEWAY_CLASS);
  let registered: RegisteredController<GatewayClassObject> | undefined;
  registered = manager.register<GatewayClassObject>({
    kind: GATEWAY_CLASS,
    workers: 1,
    async reconcile({ name }, { log }) {
      const gatewayClass = registered?.informer.cache.get(undefined, name);
      if (!gatewayClass || gatewayClass.metadata?.deletionTimestamp || !isEdgewardGatewayClass(gatewayClass))
        return;
      const { written } = await manager.statusWriter.write(classes, gatewayClass, (current) =>
        gatewayClassStatus(current, discovery.bundleVersion),
      );
      if (written) log.info({ generation: gatewayClass.metadata?.generation }, 'GatewayClass accepted');
    },
  });
  return registered;
}
