import { describe, expect, it } from 'vitest';
import { HttpsRouteTable } from '../../../edge/https/https-routes.js';
import type { EdgeConfig } from '../../../schemas/edge-config.js';
import { desiredObjects, type IngressObject, type IngressPath, isEdgewardIngress } from './desired.js';

const ingress = (spec: IngressObject['spec'], annotations: Record<string, string> = {}): IngressObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name: 'shop', namespace: 'team', uid: 'u1', annotations },
  spec,
});

const backend = (name: string, port: { number?: number; name?: string }) => ({ service: { name, port } });

describe('the CRs an Ingress of the class edgeward becomes', () => {
  it('is the class edgeward by spec.ingressClassName or the old annotation, and no other', () => {
    expect(isEdgewardIngress(ingress({ ingressClassName: 'edgeward' }))).toBe(true);
    expect(isEdgewardIngress(ingress({}, { 'kubernetes.io/ingress.class': 'edgeward' }))).toBe(true);
    expect(isEdgewardIngress(ingress({ ingressClassName: 'other' }))).toBe(false);
    expect(isEdgewardIngress(ingress({}))).toBe(false);
  });

  it('makes one credential and edge, a route per (host, path) and a Tunnel per Service port', () => {
    const { objects, ignored } = desiredObjects(
      ingress(
        {
          ingressClassName: 'edgeward',
          rules: [
            {
              host: 'Shop.example.com',
              http: {
                paths: [
                  { path: '/', pathType: 'Exact', backend: backend('web', { number: 80 }) },
                  { path: '/api', pathType: 'Prefix', backend: backend('api', { name: 'http' }) },
                  {
                    path: '/v2',
                    pathType: 'ImplementationSpecific',
                    backend: backend('api', { name: 'http' }),
                  },
                ],
              },
            },
            {
              host: 'www.example.com',
              http: { paths: [{ pathType: 'Prefix', backend: backend('web', { number: 80 }) }] },
            },
          ],
        },
        { 'edgeward.dev/ip-policy': 'office, vpn' },
      ),
    );
    expect(ignored).toEqual([]);
    const byKind = (kind: string) => objects.filter((object) => object.kind.kind === kind);
    expect(byKind('TunnelCredential').map((object) => object.spec.acl)).toEqual([
      ['bind:ingress=team.shop', 'bind:service=*', 'bind:port=*'],
    ]);
    expect(byKind('HTTPSEdge').map((object) => object.spec.hostports)).toEqual([
      ['shop.example.com:443', 'www.example.com:443'],
    ]);
    const routes = byKind('HTTPSEdgeRoute').map((object) => object.spec);
    expect(routes.map((route) => `${route.matchType} ${route.match}`)).toEqual([
      'exact_path shop.example.com/',
      'exact_path shop.example.com/api',
      'path_prefix shop.example.com/api/',
      'path_prefix shop.example.com/v2',
      'path_prefix www.example.com/',
    ]);
    for (const route of [routes[1], routes[2]]) {
      expect(route).toMatchObject({
        description: 'Ingress team/shop: shop.example.com/api (Prefix) to api:http',
        edgeRef: { name: 'shop-ingress' },
        backend: { labels: { ingress: 'team.shop', service: 'api', port: 'http' } },
        ipRestriction: { ipPolicyRefs: [{ name: 'office' }, { name: 'vpn' }] },
      });
    }
    expect(byKind('Tunnel').map((object) => object.spec.forward)).toEqual([
      { service: { name: 'web', port: 80 }, protocol: 'http' },
      { service: { name: 'api', portName: 'http' }, protocol: 'http' },
    ]);
    // Names are stable (the hash of what they are for) and distinct.
    const names = objects.map((object) => object.name);
    expect(new Set(names).size).toBe(names.length);
    expect(desiredObjects(ingress({ rules: [] })).objects).toEqual([]);
  });

  it('says what it does not carry: a default backend without a host to serve, rules without a host', () => {
    const { objects, ignored } = desiredObjects(
      ingress({
        defaultBackend: backend('web', { number: 80 }),
        tls: [{ hosts: ['shop.example.com'], secretName: 'shop-tls' }],
        rules: [
          { http: { paths: [{ path: '/', pathType: 'Prefix', backend: backend('web', { number: 80 }) }] } },
        ],
      }),
    );
    expect(objects).toEqual([]);
    expect(ignored).toEqual([
      'spec.rules[0] (no host: not supported)',
      'spec.defaultBackend (no rule names a host: an edge serves named hosts only)',
    ]);
    expect(
      desiredObjects(
        ingress({
          defaultBackend: { resource: { kind: 'Bucket', name: 'b' } },
          rules: [{ host: 'shop.example.com' }],
        }),
      ).ignored,
    ).toEqual(['spec.defaultBackend (a resource backend: not supported)']);
  });

  /**
   * Which Service the edge picks for a request path: the Ingress's routes put in the edge's own
   * route table (its precedence: exact paths, then the longest prefix), as the edge would serve them.
   */
  function served(spec: IngressObject['spec']): (path: string) => string | undefined {
    const routes = desiredObjects(ingress(spec))
      .objects.filter((object) => object.kind.kind === 'HTTPSEdgeRoute')
      .map(({ name, spec: route }) => ({
        id: name,
        match_type: route.matchType,
        match: route.match,
        modules: {},
        service: (route.backend as { labels: { service: string } }).labels.service,
      }));
    const table = new HttpsRouteTable(() => {});
    const config = {
      revision: '1',
      backends: [],
      ip_policies: [],
      certificate_authorities: [],
      https_edges: [{ id: 'edghts_1', hostports: ['shop.example.com:443'], routes }],
    } as unknown as EdgeConfig;
    table.apply(config, { cookieKey: Buffer.alloc(32), log: () => {} });
    const entry = table.edgeFor('shop.example.com');
    return (path) => {
      const route = entry && table.routeFor(entry, 'shop.example.com', path);
      return routes.find((candidate) => candidate.id === route?.id)?.service;
    };
  }

  const rules = (...paths: [string, IngressPath['pathType'], string][]): IngressObject['spec'] => ({
    rules: [
      {
        host: 'shop.example.com',
        http: {
          paths: paths.map(([path, pathType, service]) => ({
            path,
            pathType,
            backend: backend(service, { number: 80 }),
          })),
        },
      },
    ],
  });

  // The examples of https://kubernetes.io/docs/concepts/services-networking/ingress/#examples
  it.each([
    ['Prefix', ['/'], '/anything', true],
    ['Prefix', ['/'], '/', true],
    ['Exact', ['/foo'], '/foo', true],
    ['Exact', ['/foo'], '/bar', false],
    ['Exact', ['/foo'], '/foo/', false],
    ['Exact', ['/foo/'], '/foo', false],
    ['Prefix', ['/foo'], '/foo', true],
    ['Prefix', ['/foo'], '/foo/', true],
    ['Prefix', ['/foo/'], '/foo', true],
    ['Prefix', ['/foo/'], '/foo/', true],
    ['Prefix', ['/aaa/bb'], '/aaa/bbb', false],
    ['Prefix', ['/aaa/bbb'], '/aaa/bbb', true],
    ['Prefix', ['/aaa/bbb/'], '/aaa/bbb', true],
    ['Prefix', ['/aaa/bbb'], '/aaa/bbb/', true],
    ['Prefix', ['/aaa/bbb'], '/aaa/bbb/ccc', true],
    ['Prefix', ['/aaa/bbb'], '/aaa/bbbxyz', false],
    ['Prefix', ['/', '/aaa'], '/aaa/ccc', '/aaa'],
    ['Prefix', ['/', '/aaa', '/aaa/bbb'], '/aaa/bbb', '/aaa/bbb'],
    ['Prefix', ['/', '/aaa', '/aaa/bbb'], '/ccc', '/'],
    ['Prefix', ['/aaa'], '/ccc', false],
  ] as const)('%s %j serves %s: %s', (pathType, paths, request, expected) => {
    // Each path goes to a Service named after it; `true` names the only one.
    const serve = served(
      rules(...paths.map((path): [string, typeof pathType, string] => [path, pathType, path])),
    );
    const want = expected === true ? paths[0] : expected === false ? undefined : expected;
    expect(serve(request)).toBe(want);
  });

  it('prefers Exact to Prefix for one path, whatever their order, and keeps one route per match', () => {
    for (const spec of [
      rules(['/foo', 'Prefix', 'prefix'], ['/foo', 'Exact', 'exact']),
      rules(['/foo', 'Exact', 'exact'], ['/foo', 'Prefix', 'prefix']),
    ]) {
      const serve = served(spec);
      expect(serve('/foo')).toBe('exact');
      expect(serve('/foo/bar')).toBe('prefix');
      const matches = desiredObjects(ingress(spec))
        .objects.filter((object) => object.kind.kind === 'HTTPSEdgeRoute')
        .map((object) => `${object.spec.matchType} ${object.spec.match}`);
      expect(matches).toEqual(['exact_path shop.example.com/foo', 'path_prefix shop.example.com/foo/']);
    }
  });

  it('takes ImplementationSpecific as the edge string prefix', () => {
    const serve = served(rules(['/api', 'ImplementationSpecific', 'api']));
    expect(['/api', '/api/x', '/apix'].map(serve)).toEqual(['api', 'api', 'api']);
    expect(serve('/ap')).toBeUndefined();
  });

  it('sends what no rule matches to spec.defaultBackend, on every host, never before a rule', () => {
    const spec = {
      ...rules(['/api', 'Prefix', 'api'], ['/', 'Exact', 'home']),
      defaultBackend: backend('fallback', { name: 'http' }),
    };
    spec.rules?.push({ host: 'www.example.com' });
    const serve = served(spec);
    expect(['/api', '/api/x', '/', '/apix', '/other/x'].map(serve)).toEqual([
      'api',
      'api',
      'home',
      'fallback',
      'fallback',
    ]);
    const { objects, ignored } = desiredObjects(ingress(spec));
    expect(ignored).toEqual([]);
    const routes = objects.filter((object) => object.kind.kind === 'HTTPSEdgeRoute');
    expect(routes.map((object) => `${object.spec.matchType} ${object.spec.match}`)).toEqual([
      'exact_path shop.example.com/api',
      'path_prefix shop.example.com/api/',
      'exact_path shop.example.com/',
      'path_prefix shop.example.com/',
      'path_prefix www.example.com/',
    ]);
    expect(routes[3]?.spec.description).toBe(
      'Ingress team/shop: shop.example.com (defaultBackend) to fallback:http',
    );
    expect(
      objects.filter((object) => object.kind.kind === 'Tunnel').map((object) => object.spec.labels),
    ).toEqual([
      { ingress: 'team.shop', service: 'api', port: '80' },
      { ingress: 'team.shop', service: 'home', port: '80' },
      { ingress: 'team.shop', service: 'fallback', port: 'http' },
    ]);
    // A rule of its own for / takes the host's catch-all from the default backend.
    const own = served({
      ...rules(['/', 'Prefix', 'web']),
      defaultBackend: backend('fallback', { number: 80 }),
    });
    expect(own('/x')).toBe('web');
  });

  it('makes a TLSCertificate following each Secret of spec.tls, before the edge, its hosts kept for coverage', () => {
    const { objects, ignored, certificates } = desiredObjects(
      ingress({
        ingressClassName: 'edgeward',
        tls: [
          { hosts: ['Shop.example.com'], secretName: 'shop-tls' },
          { hosts: ['www.example.com', 'shop.example.com'], secretName: 'shop-tls' },
          { hosts: ['api.example.com'], secretName: 'api-tls' },
          { hosts: ['acme.example.com'] },
        ],
        rules: [
          {
            host: 'shop.example.com',
            http: { paths: [{ path: '/', backend: backend('web', { number: 80 }) }] },
          },
        ],
      }),
    );
    expect(ignored).toEqual([]);
    expect(objects.map((object) => object.kind.kind)).toEqual([
      'TunnelCredential',
      'TLSCertificate',
      'TLSCertificate',
      'HTTPSEdge',
      'HTTPSEdgeRoute',
      'Tunnel',
    ]);
    const tls = objects.filter((object) => object.kind.kind === 'TLSCertificate');
    expect(tls.map((object) => object.spec)).toEqual([
      {
        description: 'Ingress team/shop: Secret shop-tls',
        secretRef: { name: 'shop-tls' },
        deletionPolicy: 'Delete',
      },
      {
        description: 'Ingress team/shop: Secret api-tls',
        secretRef: { name: 'api-tls' },
        deletionPolicy: 'Delete',
      },
    ]);
    expect(certificates).toEqual([
      { name: tls[0]?.name, secretName: 'shop-tls', hosts: ['shop.example.com', 'www.example.com'] },
      { name: tls[1]?.name, secretName: 'api-tls', hosts: ['api.example.com'] },
    ]);
    expect(tls[0]?.name).toMatch(/^shop-tls-[0-9a-f]{8}$/);
  });
});
