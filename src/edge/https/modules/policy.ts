import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import { compilePolicy } from '../../../traffic-policy/index.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

const TLS_VERSION_NAMES: Record<string, string> = {
  TLSv1: '1.0',
  'TLSv1.1': '1.1',
  'TLSv1.2': '1.2',
  'TLSv1.3': '1.3',
};

/**
 * `policy`: the route's traffic policy (CEL rules and actions, `traffic-policy/`). Inbound it may
 * answer, rewrite the target or change the request's headers; outbound it may answer instead of the
 * upstream or change the response's headers.
 */
export const policyModule: EdgeRouteModule<ModuleConfig<'policy'>> = {
  schema: ROUTE_MODULE_SCHEMAS.policy.input,
  compile(config, context) {
    const { routeId } = context;
    const policy = compilePolicy(config, {
      phase: 'http',
      onError: (error) =>
        context.log({
          level: 'warn',
          message: 'policy expression failed',
          routeId,
          detail: { error: error.message },
        }),
      onLog: (entry) =>
        context.log({ level: 'info', message: 'policy log action', routeId, detail: { ...entry } }),
    });
    return {
      onRequest(exchange) {
        const { request } = exchange;
        const tlsVersion = TLS_VERSION_NAMES[request.socket.getProtocol() ?? ''];
        const outcome = policy.inbound({
          method: request.method,
          url: exchange.href,
          path: exchange.path,
          query: exchange.query.slice(1),
          host: exchange.host,
          headers: request.headers,
          clientIp: exchange.clientIp,
          clientPort: request.socket.remotePort ?? 0,
          ...(tlsVersion && { tlsVersion }),
        });
        if (outcome.respond) return { ...outcome.respond, outcome: 'policy' };
        for (const name of outcome.removeHeaders) delete exchange.headers[name];
        exchange.headers = { ...exchange.headers, ...outcome.setHeaders };
        if (outcome.rewrittenPath) exchange.target = outcome.rewrittenPath;
        return undefined;
      },
      onResponse(response) {
        const { admitted } = response;
        const { request, target } = admitted;
        const outcome = policy.outbound(
          {
            method: request.method,
            url: `https://${admitted.headers.host}${target}`,
            path: target.split('?')[0] ?? '/',
            query: target.includes('?') ? target.slice(target.indexOf('?') + 1) : '',
            host: admitted.host,
            headers: request.headers,
            clientIp: admitted.clientIp,
            clientPort: request.socket.remotePort ?? 0,
          },
          { status: response.status, headers: response.headers },
        );
        if (outcome.respond) return { ...outcome.respond, outcome: 'policy' };
        for (const name of outcome.removeHeaders) delete response.headers[name];
        response.headers = { ...response.headers, ...outcome.setHeaders };
        return undefined;
      },
    };
  },
};
