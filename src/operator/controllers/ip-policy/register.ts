import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { IP_POLICY } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type IpPolicyObject, ipPolicySync } from './sync.js';

/** IPPolicy -> `/ip_policies` and `/ip_policy_rules`. No references (TLSEdges reference it). */
export function registerIpPolicy(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<IpPolicyObject> {
  const client = manager.resources<IpPolicyObject>(IP_POLICY);
  const informer = manager.informer<IpPolicyObject>(IP_POLICY);
  const controller = { manager, kind: IP_POLICY, client, informer, sync: ipPolicySync(api) };
  return manager.register<IpPolicyObject>({
    kind: IP_POLICY,
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
