import { describe, expect, it } from 'vitest';
import {
  type EndpointSliceObject,
  resolveUpstream,
  type ServiceObject,
  type ServicePort,
} from './upstream.js';

/** Service -> one address, as the Tunnel controller resolves it from the informers' caches. */

const service = (ports: ServicePort[], clusterIP = '10.0.0.7'): ServiceObject => ({
  metadata: { name: 'web', namespace: 'ns' },
  spec: { clusterIP, ports },
});

const slice = (
  endpoints: { address: string; ready?: boolean | null }[],
  ports: EndpointSliceObject['ports'] = [{ name: 'http', port: 8080, protocol: 'TCP' }],
): EndpointSliceObject => ({
  metadata: {
    name: `web-${endpoints.length}`,
    namespace: 'ns',
    labels: { 'kubernetes.io/service-name': 'web' },
  },
  addressType: 'IPv4',
  endpoints: endpoints.map(({ address, ready }) => ({
    addresses: [address],
    ...(ready === undefined ? {} : { conditions: { ready } }),
  })),
  ports,
});

const web = service([
  { name: 'http', port: 80, targetPort: 'http' },
  { name: 'admin', port: 9000, targetPort: 9001 },
]);

describe('resolveUpstream', () => {
  it('names a missing Service, an unknown port, and an ambiguous one', () => {
    expect(resolveUpstream(undefined, [], { name: 'web' })).toEqual({
      ready: false,
      reason: 'ServiceNotFound',
      message: 'Service web does not exist',
    });
    expect(resolveUpstream(web, [], { name: 'web', port: 81 })).toMatchObject({
      reason: 'ServiceNotFound',
      message: 'Service web has no port 81',
    });
    expect(resolveUpstream(web, [], { name: 'web', portName: 'grpc' })).toMatchObject({
      message: 'Service web has no port named grpc',
    });
    expect(resolveUpstream(web, [], { name: 'web' })).toMatchObject({
      reason: 'ServiceNotFound',
      message: 'Service web has 2 ports: name one with forward.service.port or portName',
    });
  });

  it('picks a ready endpoint on the slice port named like the Service port', () => {
    const slices = [slice([{ address: '10.1.0.1', ready: false }, { address: '10.1.0.2' }])];
    expect(resolveUpstream(web, slices, { name: 'web', port: 80 })).toEqual({
      ready: true,
      via: 'endpoint',
      host: '10.1.0.2',
      port: 8080,
    });
    expect(resolveUpstream(web, slices, { name: 'web', portName: 'http' })).toMatchObject({ port: 8080 });
  });

  it('falls back to a numeric targetPort (or the port itself) when no slice port matches', () => {
    const slices = [slice([{ address: '10.1.0.3', ready: true }])];
    expect(resolveUpstream(web, slices, { name: 'web', portName: 'admin' })).toMatchObject({
      host: '10.1.0.3',
      port: 9001,
    });
    const plain = service([{ port: 5432 }]);
    expect(resolveUpstream(plain, [slice([{ address: '10.1.0.4' }], [])], { name: 'web' })).toMatchObject({
      host: '10.1.0.4',
      port: 5432,
    });
  });

  it('says when no endpoint is ready, and never reaches a named target port it cannot see', () => {
    expect(
      resolveUpstream(web, [slice([{ address: '10.1.0.1', ready: false }])], { name: 'web', port: 80 }),
    ).toEqual({
      ready: false,
      reason: 'NoReadyEndpoints',
      message: 'Service web has no ready endpoint for port http (80)',
    });
    // targetPort 'http' is a container port name: only a slice port says its number.
    expect(
      resolveUpstream(web, [slice([{ address: '10.1.0.1' }], [])], { name: 'web', port: 80 }),
    ).toMatchObject({
      reason: 'NoReadyEndpoints',
    });
  });

  it('uses the clusterIP only when the Service has no EndpointSlice', () => {
    expect(resolveUpstream(web, [], { name: 'web', port: 80 })).toEqual({
      ready: true,
      via: 'clusterIP',
      host: '10.0.0.7',
      port: 80,
    });
    const headless = service([{ port: 80 }], 'None');
    expect(resolveUpstream(headless, [], { name: 'web' })).toMatchObject({ reason: 'NoReadyEndpoints' });
  });

  it('keeps the current endpoint while it is ready, else picks among the ready ones', () => {
    const slices = [slice([{ address: '10.1.0.1' }, { address: '10.1.0.2' }, { address: '10.1.0.3' }])];
    const ref = { name: 'web', port: 80 };
    expect(resolveUpstream(web, slices, ref, { host: '10.1.0.3', port: 8080 }, () => 0)).toMatchObject({
      host: '10.1.0.3',
    });
    expect(resolveUpstream(web, slices, ref, { host: '10.1.0.9', port: 8080 }, () => 0.5)).toMatchObject({
      host: '10.1.0.2',
    });
  });
});
