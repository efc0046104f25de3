import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import { compileHeaderRules } from './header-rules.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

/** `response_headers`: names removed, then names added, on the answer the client gets (upgrades too). */
export const responseHeadersModule: EdgeRouteModule<ModuleConfig<'response_headers'>> = {
  schema: ROUTE_MODULE_SCHEMAS.response_headers.input,
  compile(config) {
    const rules = compileHeaderRules(config);
    return {
      onResponse(response) {
        response.headers = rules.apply(response.headers);
        return undefined;
      },
      onUpgradeResponse: (headers) => rules.apply(headers),
    };
  },
};
