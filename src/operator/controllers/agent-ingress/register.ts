import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { registerManaged } from '../managed/register-managed.js';
import { AGENT_INGRESS } from '../resource-types.js';
import { type AgentIngressObject, agentIngressSync } from './sync.js';

/** AgentIngress -> `/agent_ingresses`. No references. */
export function registerAgentIngress(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<AgentIngressObject> {
  return registerManaged(manager, AGENT_INGRESS, agentIngressSync(api));
}
