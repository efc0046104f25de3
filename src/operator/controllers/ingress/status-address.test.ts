import { describe, expect, it } from 'vitest';
import { loadBalancerIngresses, parseIngressStatusAddresses } from './status-address.js';

describe('--ingress-status-address', () => {
  it('tells IP addresses from host names, several separated by commas', () => {
    expect(parseIngressStatusAddresses('203.0.113.10')).toEqual([{ ip: '203.0.113.10' }]);
    expect(parseIngressStatusAddresses('Edge.Example.com.')).toEqual([{ hostname: 'edge.example.com' }]);
    expect(parseIngressStatusAddresses('203.0.113.10, 2001:db8::10,[2001:db8::11],lb.example.net')).toEqual([
      { ip: '203.0.113.10' },
      { ip: '2001:db8::10' },
      { ip: '2001:db8::11' },
      { hostname: 'lb.example.net' },
    ]);
  });

  it('refuses what is neither, naming it', () => {
    expect(() => parseIngressStatusAddresses('')).toThrow('--ingress-status-address: give an IP address');
    expect(() => parseIngressStatusAddresses('edge.example.com:443')).toThrow(
      '--ingress-status-address: edge.example.com:443 is neither an IP address nor a DNS name',
    );
    expect(() => parseIngressStatusAddresses('under_score.example.com')).toThrow('neither');
  });
});

describe('status.loadBalancer.ingress', () => {
  it('is the flag’s addresses once served, else the served hosts, and nothing before', () => {
    const addresses = parseIngressStatusAddresses('203.0.113.10,lb.example.net');
    expect(loadBalancerIngresses(['shop.example.com'], addresses)).toEqual(addresses);
    expect(loadBalancerIngresses(['shop.example.com'], [])).toEqual([{ hostname: 'shop.example.com' }]);
    expect(loadBalancerIngresses([], addresses)).toEqual([]);
  });
});
