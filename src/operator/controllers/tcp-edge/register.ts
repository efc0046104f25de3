import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { registerEdge } from '../edges/register-edge.js';
import { TCP_EDGE } from '../kinds.js';
import { type TcpEdgeObject, tcpEdgeSync } from './sync.js';

/** TCPEdge -> `/edges/tcp`, following the IPPolicies it names. */
export function registerTcpEdge(manager: Manager, api: EdgewardClient): RegisteredController<TcpEdgeObject> {
  return registerEdge(manager, TCP_EDGE, (references) => tcpEdgeSync(api, references));
}
