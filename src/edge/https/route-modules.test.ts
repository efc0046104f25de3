import { describe, expect, it } from 'vitest';
import type { EdgeConfig, EdgeHttpsRoute } from '../../schemas/edge-config.js';
import { ROUTE_MODULE_NAMES } from '../../schemas/route-module-table.js';
import type { RequestExchange } from './exchange.js';
import { EDGE_ROUTE_MODULES } from './modules/index.js';
import { Pages } from './pages.js';
import { compileRouteModules, RESERVED_PATH_PREFIXES, RouteModuleError } from './route-modules.js';

const config: EdgeConfig = {
  revision: '1',
  credentials: [],
  ssh_credentials: [],
  ip_policies: [{ id: 'ipp_deny', rules: [{ action: 'deny', cidr: '10.0.0.0/8' }] }],
  backends: [{ id: 'bkdtg_web', labels: { app: 'web' } }],
  reserved_addrs: [],
  certificate_authorities: [],
  tls_certificates: [],
  tcp_edges: [],
  tls_edges: [],
  https_edges: [],
  acme_challenges: [],
  agent_ingress_domains: [],
};
const context = { config, cookieKey: Buffer.alloc(32), log: () => {} };

function route(modules: Record<string, unknown>): EdgeHttpsRoute {
  return { id: 'edghtsrt_1', match_type: 'path_prefix', match: '/', modules } as EdgeHttpsRoute;
}

function exchange(clientIp: string): RequestExchange {
  return {
    request: {
      method: 'GET',
      target: '/',
      headers: { 'user-agent': 'curl/8' },
    } as RequestExchange['request'],
    host: 'example.com',
    href: 'https://example.com/',
    path: '/',
    query: '',
    clientIp,
    target: '/',
    headers: { host: 'example.com' },
    body: undefined,
    setCookies: [],
    page: (page) => ({ status: page.status, headers: {}, body: '', outcome: page.code }),
  };
}

describe('route modules at the edge', () => {
  it('has a row for every module of the API, and only those', () => {
    expect(Object.keys(EDGE_ROUTE_MODULES).sort()).toEqual([...ROUTE_MODULE_NAMES].sort());
    expect(RESERVED_PATH_PREFIXES).toEqual(['/saml/', '/_edgeward/auth/']);
  });

  it('runs the modules on in table order: the IP restriction refuses before the request headers apply', async () => {
    const modules = compileRouteModules(
      route({
        backend: { enabled: true, backend_id: 'bkdtg_web' },
        ip_restriction: { enabled: true, ip_policy_ids: ['ipp_deny'] },
        request_headers: { enabled: true, add: { 'x-added': 'yes' }, remove: [] },
      }),
      context,
    );
    expect(modules.tunnelGroup).toEqual({ app: 'web' });
    const refused = exchange('10.1.2.3');
    expect((await modules.onRequest(refused))?.outcome).toBe(Pages.ipDenied().code);
    expect(refused.headers['x-added']).toBeUndefined();
    const allowed = exchange('192.0.2.1');
    expect(await modules.onRequest(allowed)).toBeUndefined();
    expect(allowed.headers['x-added']).toBe('yes');
  });

  it('refuses with no-backend where the backend acts when the route has none, or names one the feed lacks', async () => {
    for (const modules of [
      route({ request_headers: { enabled: true, add: {}, remove: [] } }),
      route({ backend: { enabled: true, backend_id: 'bkdtg_gone' } }),
      route({ backend: { enabled: false, backend_id: 'bkdtg_web' } }),
    ]) {
      const compiled = compileRouteModules(modules, context);
      expect(compiled.tunnelGroup).toBeUndefined();
      expect((await compiled.onRequest(exchange('192.0.2.1')))?.outcome).toBe('no-backend');
    }
  });

  it('skips disabled modules, and refuses what it cannot read, naming the module', async () => {
    const off = compileRouteModules(
      route({
        backend: { enabled: true, backend_id: 'bkdtg_web' },
        ip_restriction: { enabled: false, ip_policy_ids: ['ipp_deny'] },
      }),
      context,
    );
    expect(await off.onRequest(exchange('10.1.2.3'))).toBeUndefined();
    const unreadable = () => compileRouteModules(route({ compression: { enabled: 'yes' } }), context);
    expect(unreadable).toThrow(RouteModuleError);
    expect(unreadable).toThrow(/^compression: unreadable configuration/);
    expect(() => compileRouteModules(route({ teleport: { enabled: true } }), context)).toThrow(
      /^teleport: a module this edge does not know/,
    );
  });
});
