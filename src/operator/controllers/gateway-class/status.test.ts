import { describe, expect, it } from 'vitest';
import {
  GATEWAY_CONTROLLER_NAME,
  type GatewayClassObject,
  gatewayClassStatus,
  isEdgewardGatewayClass,
  isSupportedBundleVersion,
} from './status.js';

const gatewayClass = (generation: number, status?: GatewayClassObject['status']): GatewayClassObject => ({
  metadata: { name: 'edgeward', generation },
  spec: { controllerName: GATEWAY_CONTROLLER_NAME },
  status,
});

/** The default status the CRD gives a new GatewayClass. */
const PENDING = {
  type: 'Accepted',
  status: 'Unknown' as const,
  reason: 'Pending',
  message: 'Waiting for controller',
  lastTransitionTime: '1970-01-01T00:00:00Z',
};

describe('gatewayClassStatus', () => {
  it('accepts the class for its generation and says the installed version is supported', () => {
    const status = gatewayClassStatus(gatewayClass(3, { conditions: [PENDING] }), 'v1.6.3');
    expect(status?.conditions).toMatchObject([
      { type: 'Accepted', status: 'True', reason: 'Accepted', observedGeneration: 3 },
      { type: 'SupportedVersion', status: 'True', reason: 'SupportedVersion', observedGeneration: 3 },
    ]);
    expect(status?.conditions?.[0]?.lastTransitionTime).not.toBe(PENDING.lastTransitionTime);
  });

  it('stays Accepted with SupportedVersion False for another or an unknown bundle version', () => {
    for (const version of ['v1.5.1', 'v2.0.0', undefined]) {
      const status = gatewayClassStatus(gatewayClass(1), version);
      expect(status?.conditions).toMatchObject([
        { type: 'Accepted', status: 'True' },
        { type: 'SupportedVersion', status: 'False', reason: 'UnsupportedVersion', observedGeneration: 1 },
      ]);
    }
  });

  it("keeps others' conditions and other status fields, and is stable when nothing changed", () => {
    const other = { ...PENDING, type: 'example.com/Special', status: 'True' as const, reason: 'Fine' };
    const first = gatewayClassStatus(
      gatewayClass(2, { conditions: [other], supportedFeatures: [{ name: 'Gateway' }] }),
      'v1.6.0',
    );
    expect(first?.conditions?.[0]).toEqual(other);
    expect(first?.supportedFeatures).toEqual([{ name: 'Gateway' }]);
    expect(gatewayClassStatus(gatewayClass(2, first), 'v1.6.0')).toEqual(first);
  });

  it('leaves the status alone when a condition is of a newer generation than this copy', () => {
    const newer = {
      conditions: [{ ...PENDING, status: 'True' as const, reason: 'Accepted', observedGeneration: 5 }],
    };
    expect(gatewayClassStatus(gatewayClass(4, newer), 'v1.6.3')).toBe(newer);
  });
});

describe('isEdgewardGatewayClass, isSupportedBundleVersion', () => {
  it('tells our classes and supported releases', () => {
    expect(isEdgewardGatewayClass(gatewayClass(1))).toBe(true);
    expect(isEdgewardGatewayClass({ spec: { controllerName: 'example.com/gateway' } })).toBe(false);
    expect(isSupportedBundleVersion('v1.6.3')).toBe(true);
    expect(isSupportedBundleVersion('v1.6.3-rc.1')).toBe(false);
    expect(isSupportedBundleVersion('v1.60.0')).toBe(false);
  });
});
