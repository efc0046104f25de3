import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { AGENT_INGRESS } from '../kinds.js';
import { registerManaged } from '../managed/register-managed.js';
import { type AgentIngressObject, agentIngressSync } from './sync.js';

/** AgentIngress -> `/agent_ingresses`. No references. */
export function registerAgentIngress(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<AgentIngressObject> {
  return registerManaged(manager, AGENT_INGRESS, agentIngressSync(api));
}
