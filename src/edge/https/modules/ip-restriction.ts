import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import { compileIpRestriction } from '../../routing/ip-policy.js';
import { Pages } from '../pages.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

/** `ip_restriction`: 403 for a client address the route's IP policies refuse, sign-in paths included. */
export const ipRestrictionModule: EdgeRouteModule<ModuleConfig<'ip_restriction'>> = {
  schema: ROUTE_MODULE_SCHEMAS.ip_restriction.input,
  compile(config, context) {
    const restriction = compileIpRestriction(config.ip_policy_ids, context.config.ip_policies);
    return {
      guardsReservedPaths: true,
      onRequest: (exchange) =>
        restriction.allows(exchange.clientIp) ? undefined : exchange.page(Pages.ipDenied()),
    };
  },
};
