import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { IP_POLICY } from '../kinds.js';
import { registerManaged } from '../managed/register-managed.js';
import { type IpPolicyObject, ipPolicySync } from './sync.js';

/** IPPolicy -> `/ip_policies` and `/ip_policy_rules`. No references (TLSEdges reference it). */
export function registerIpPolicy(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<IpPolicyObject> {
  return registerManaged(manager, IP_POLICY, ipPolicySync(api));
}
