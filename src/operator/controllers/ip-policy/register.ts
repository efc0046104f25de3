import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { registerManaged } from '../managed/register-managed.js';
import { IP_POLICY } from '../resource-types.js';
import { type IpPolicyObject, ipPolicySync } from './sync.js';

/** IPPolicy -> `/ip_policies` and `/ip_policy_rules`. No references (TLSEdges reference it). */
export function registerIpPolicy(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<IpPolicyObject> {
  return registerManaged(manager, IP_POLICY, ipPolicySync(api));
}
