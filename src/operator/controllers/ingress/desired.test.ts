import { describe, expect, it } from 'vitest';
import { desiredObjects, type IngressObject, isEdgewardIngress } from './desired.js';

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
      'path_prefix shop.example.com/api',
      'path_prefix shop.example.com/v2',
      'path_prefix www.example.com/',
    ]);
    expect(routes[1]).toMatchObject({
      edgeRef: { name: 'shop-ingress' },
      backend: { labels: { ingress: 'team.shop', service: 'api', port: 'http' } },
      ipRestriction: { ipPolicyRefs: [{ name: 'office' }, { name: 'vpn' }] },
    });
    expect(byKind('Tunnel').map((object) => object.spec.forward)).toEqual([
      { service: { name: 'web', port: 80 }, protocol: 'http' },
      { service: { name: 'api', portName: 'http' }, protocol: 'http' },
    ]);
    // Names are stable (the hash of what they are for) and distinct.
    const names = objects.map((object) => object.name);
    expect(new Set(names).size).toBe(names.length);
    expect(desiredObjects(ingress({ rules: [] })).objects).toEqual([]);
  });

  it('says what it does not carry: a default backend, rules without a host', () => {
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
      'spec.defaultBackend (not supported: give every rule a host)',
      'spec.rules[0] (no host: not supported)',
    ]);
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
