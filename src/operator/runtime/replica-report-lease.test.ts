import { describe, expect, it } from 'vitest';
import { encodeEntries, reportGroupLabel, reportLeaseName } from './replica-report-lease.js';

/** The report Lease's name, label and size limit. */

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

describe('replica report Leases', () => {
  it('names a report after the replica, as a Lease name may be', () => {
    expect(reportLeaseName('edgeward-operator', 'edgeward-operator-7d9f8-abcde_0b1c')).toBe(
      'edgeward-operator-replica-edgeward-operator-7d9f8-abcde-0b1c',
    );
    for (const identity of ['Host.Example_1', 'node-.a.-b_c', '_x_', `${'a'.repeat(300)}_id`]) {
      const name = reportLeaseName('op', identity);
      expect(name, identity).toMatch(DNS_SUBDOMAIN);
      expect(name.length).toBeLessThanOrEqual(253);
    }
  });

  it('labels reports with the leader election id, hashed when it is no label value', () => {
    expect(reportGroupLabel('edgeward-operator')).toBe('edgeward-operator');
    const long = reportGroupLabel('a'.repeat(64));
    expect(long).toMatch(/^sha256-[0-9a-f]{32}$/);
    expect(reportGroupLabel('a'.repeat(64))).toBe(long);
    expect(reportGroupLabel('with.dots-ok')).toBe('with.dots-ok');
    expect(reportGroupLabel('-starts-badly')).toMatch(/^sha256-/);
  });

  it('leaves whole keys out past the size limit, and says how many', () => {
    const entries = Object.fromEntries(
      Array.from({ length: 10 }, (_, index) => [`ns/tunnel-${index}`, [`ts_${index}`]]),
    );
    expect(encodeEntries(entries)).toEqual({ json: JSON.stringify(entries), omitted: 0 });
    const { json, omitted } = encodeEntries(entries, 100);
    expect(omitted).toBeGreaterThan(0);
    expect(Buffer.byteLength(json)).toBeLessThanOrEqual(100);
    expect(Object.keys(JSON.parse(json))).toHaveLength(10 - omitted);
  });
});
