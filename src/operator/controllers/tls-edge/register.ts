import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { TLS_EDGE } from '../resource-types.js';
import { registerEdge } from '../shared/edges/register-edge.js';
import { type TlsEdgeObject, tlsEdgeSync } from './sync.js';

/** TLSEdge -> `/edges/tls`, following the IPPolicies and CertificateAuthorities it names. */
export function registerTlsEdge(manager: Manager, api: EdgewardClient): RegisteredController<TlsEdgeObject> {
  return registerEdge(manager, TLS_EDGE, (references) => tlsEdgeSync(api, references));
}
