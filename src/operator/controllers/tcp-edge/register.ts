import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { TCP_EDGE } from '../resource-types.js';
import { registerEdge } from '../shared/edges/register-edge.js';
import { type TcpEdgeObject, tcpEdgeSync } from './sync.js';

/** TCPEdge -> `/edges/tcp`, following the IPPolicies it names. */
export function registerTcpEdge(manager: Manager, api: EdgewardClient): RegisteredController<TcpEdgeObject> {
  return registerEdge(manager, TCP_EDGE, (references) => tcpEdgeSync(api, references));
}
