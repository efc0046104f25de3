import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { registerEdge } from '../edges/register-edge.js';
import { TLS_EDGE } from '../kinds.js';
import { type TlsEdgeObject, tlsEdgeSync } from './sync.js';

/** TLSEdge -> `/edges/tls`, following the IPPolicies and CertificateAuthorities it names. */
export function registerTlsEdge(manager: Manager, api: EdgewardClient): RegisteredController<TlsEdgeObject> {
  return registerEdge(manager, TLS_EDGE, (references) => tlsEdgeSync(api, references));
}
