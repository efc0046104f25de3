import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import { Pages } from '../pages.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

/**
 * `backend`: the tunnel group the route sends to. A route without one, or naming a backend the
 * configuration does not have, answers 503: never another backend.
 */
export const backendModule: EdgeRouteModule<ModuleConfig<'backend'>> = {
  schema: ROUTE_MODULE_SCHEMAS.backend.input,
  whenOff: { onRequest: (exchange) => exchange.page(Pages.noBackend()) },
  compile(config, context) {
    const tunnelGroup = context.config.backends.find((backend) => backend.id === config.backend_id)?.labels;
    if (!tunnelGroup) return { onRequest: (exchange) => exchange.page(Pages.noBackend()) };
    return { tunnelGroup };
  },
};
