import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { AGENT_INGRESS } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type AgentIngressObject, agentIngressSync } from './sync.js';

/** AgentIngress -> `/agent_ingresses`. No references. */
export function registerAgentIngress(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<AgentIngressObject> {
  const client = manager.resources<AgentIngressObject>(AGENT_INGRESS);
  const informer = manager.informer<AgentIngressObject>(AGENT_INGRESS);
  const controller = { manager, kind: AGENT_INGRESS, client, informer, sync: agentIngressSync(api) };
  return manager.register<AgentIngressObject>({
    kind: AGENT_INGRESS,
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
