import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import { compileHeaderRules } from './header-rules.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

/** `request_headers`: names removed, then names added, on the request the service gets. */
export const requestHeadersModule: EdgeRouteModule<ModuleConfig<'request_headers'>> = {
  schema: ROUTE_MODULE_SCHEMAS.request_headers.input,
  compile(config) {
    const rules = compileHeaderRules(config);
    return {
      onRequest(exchange) {
        exchange.headers = rules.apply(exchange.headers);
        return undefined;
      },
    };
  },
};
