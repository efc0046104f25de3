import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { registerEdge } from '../edges/register-edge.js';
import { HTTPS_EDGE } from '../kinds.js';
import { type HttpsEdgeObject, httpsEdgeSync } from './sync.js';

/** HTTPSEdge -> `/edges/https`, following the CertificateAuthorities it names. */
export function registerHttpsEdge(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<HttpsEdgeObject> {
  return registerEdge(manager, HTTPS_EDGE, (references) => httpsEdgeSync(api, references));
}
