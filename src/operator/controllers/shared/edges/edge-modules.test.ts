import { describe, expect, it } from 'vitest';
import { sameJson } from '../../../runtime/same-json.js';
import { tlsTerminationAdapter, tlsTerminationAtEdgeAdapter } from './edge-modules.js';

const context = {
  resolved: { ipPolicyIds: undefined, certificateAuthorityIds: undefined },
  backendId: undefined,
};
const atEdge = (min_version: string | null) => ({
  enabled: true,
  terminate_at: 'edge' as const,
  min_version,
});

describe('TLS termination adapters', () => {
  it('compare a named minimum version with the server', () => {
    const desired = tlsTerminationAdapter.desired(
      { enabled: true, terminateAt: 'edge', minVersion: '1.3' },
      context,
    );
    expect(sameJson(desired, tlsTerminationAdapter.current(atEdge('1.3'), desired))).toBe(true);
    expect(sameJson(desired, tlsTerminationAdapter.current(atEdge('1.2'), desired))).toBe(false);
  });

  it('take an unset minimum as the server default, and see a minimum the spec dropped', () => {
    const tls = tlsTerminationAdapter.desired({ enabled: true, terminateAt: 'edge' }, context);
    expect(sameJson(tls, tlsTerminationAdapter.current(atEdge('1.2'), tls))).toBe(true);
    expect(sameJson(tls, tlsTerminationAdapter.current(atEdge('1.3'), tls))).toBe(false);
    const https = tlsTerminationAtEdgeAdapter.desired({ enabled: true }, context);
    expect(sameJson(https, tlsTerminationAtEdgeAdapter.current(atEdge('1.2'), https))).toBe(true);
    expect(sameJson(https, tlsTerminationAtEdgeAdapter.current(atEdge('1.3'), https))).toBe(false);
  });

  it('compare no minimum when TLS passes through upstream', () => {
    const desired = tlsTerminationAdapter.desired({ enabled: true, terminateAt: 'upstream' }, context);
    const read = { enabled: true, terminate_at: 'upstream' as const, min_version: null };
    expect(sameJson(desired, tlsTerminationAdapter.current(read, desired))).toBe(true);
  });
});
