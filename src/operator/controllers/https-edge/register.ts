import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { HTTPS_EDGE } from '../resource-types.js';
import { registerEdge } from '../shared/edges/register-edge.js';
import { type HttpsEdgeObject, httpsEdgeSync } from './sync.js';

/** HTTPSEdge -> `/edges/https`, following the CertificateAuthorities it names. */
export function registerHttpsEdge(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<HttpsEdgeObject> {
  return registerEdge(manager, HTTPS_EDGE, (references) => httpsEdgeSync(api, references));
}
