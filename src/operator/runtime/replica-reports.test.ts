import { describe, expect, it } from 'vitest';
import { FakeResourceClient } from '../../../test/support/fake/resource-client.js';
import type { Lease } from './leader-election.js';
import { silentLogger } from './logger.js';
import { REPLICA_REPORT_ANNOTATION, type ReportEntries } from './replica-report-lease.js';
import { ReplicaReports } from './replica-reports.js';
import { LEASE } from './resource-types.js';

/** The other replicas' reports as the leader reads them: fresh, changed, stale, deleted. */

const lease = (name: string, entries: ReportEntries, renewTime: string, resourceVersion = '1'): Lease => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: {
    name,
    namespace: 'ops',
    resourceVersion,
    annotations: { [REPLICA_REPORT_ANNOTATION]: JSON.stringify(entries) },
  },
  spec: { holderIdentity: `${name}_id`, leaseDurationSeconds: 15, renewTime },
});

function setup(leading = { value: true }) {
  let now = 1_000_000;
  const client = new FakeResourceClient<Lease>(LEASE);
  const reports = new ReplicaReports({
    ownName: 'me',
    client,
    namespace: 'ops',
    isLeader: () => leading.value,
    log: silentLogger,
    now: () => now,
  });
  const heard: string[][] = [];
  reports.onChange((keys) => heard.push([...keys].sort()));
  return { reports, client, heard, leading, advance: (ms: number) => (now += ms) };
}

describe('ReplicaReports', () => {
  it("counts the other replicas' sessions, not its own, and tells which keys changed", () => {
    const { reports, heard } = setup();
    reports.observe(lease('me', { 'ns/a': ['ts_mine'] }, 't0'));
    reports.observe(lease('peer-1', { 'ns/a': ['ts_1'], 'ns/b': ['ts_2'] }, 't0'));
    reports.observe(lease('peer-2', { 'ns/a': ['ts_3'] }, 't0'));
    expect(reports.peerValues('ns/a').sort()).toEqual(['ts_1', 'ts_3']);
    expect(reports.peerValues('ns/c')).toEqual([]);
    expect(heard).toEqual([['ns/a', 'ns/b'], ['ns/a']]);

    // A renewal changes no entry: nothing to reconcile.
    reports.observe(lease('peer-1', { 'ns/a': ['ts_1'], 'ns/b': ['ts_2'] }, 't1'));
    reports.observe(lease('peer-1', { 'ns/a': ['ts_1'], 'ns/b': ['ts_4'] }, 't2'));
    expect(heard.at(-1)).toEqual(['ns/b']);
    expect(heard).toHaveLength(3);

    reports.forget(lease('peer-2', {}, 't0'));
    expect(heard.at(-1)).toEqual(['ns/a']);
    expect(reports.peerValues('ns/a')).toEqual(['ts_1']);
  });

  it('drops a report not renewed within its duration, and the leader deletes that version of it', async () => {
    const { reports, client, heard, advance, leading } = setup({ value: false });
    client.put(lease('peer-1', { 'ns/a': ['ts_1'] }, 't0'));
    client.put(lease('peer-2', { 'ns/b': ['ts_2'] }, 't0'));
    for (const stored of client.storedObjects()) reports.observe(stored);
    advance(10_000);
    reports.sweep();
    expect(reports.peerValues('ns/a')).toEqual(['ts_1']);
    advance(5_001);
    reports.sweep();
    expect(reports.peerValues('ns/a')).toEqual([]);
    expect(heard.slice(-2)).toEqual([['ns/a'], ['ns/b']]);
    // peer-2 renewed just now, and its update has not reached this replica yet.
    client.put(lease('peer-2', { 'ns/b': ['ts_2'] }, 't1', '2'));
    leading.value = true;
    reports.sweep();
    await new Promise((resolve) => setImmediate(resolve));
    expect(client.requests.filter((request) => request.verb === 'delete')).toHaveLength(2);
    expect(client.stored('ops', 'peer-1')).toBeUndefined();
    expect(client.stored('ops', 'peer-2')).toBeDefined();

    // The deletion reaches the informer: nothing left to tell.
    const told = heard.length;
    reports.forget(lease('peer-1', {}, 't0'));
    expect(heard).toHaveLength(told);
  });

  it('counts a stale report again once it is renewed; only the leader deletes', async () => {
    const { reports, client, heard, advance, leading } = setup({ value: false });
    reports.observe(lease('peer-1', { 'ns/a': ['ts_1'] }, 't0'));
    advance(16_000);
    reports.sweep();
    await new Promise((resolve) => setImmediate(resolve));
    expect(client.requests).toEqual([]);
    // The same object again (a relist) does not revive it; a renewal does.
    reports.observe(lease('peer-1', { 'ns/a': ['ts_1'] }, 't0'));
    expect(reports.peerValues('ns/a')).toEqual([]);
    reports.observe(lease('peer-1', { 'ns/a': ['ts_1'] }, 't1', '2'));
    expect(reports.peerValues('ns/a')).toEqual(['ts_1']);
    expect(heard).toEqual([['ns/a'], ['ns/a'], ['ns/a']]);
    leading.value = true;
    reports.sweep();
    expect(client.requests).toEqual([]);
  });

  it('ignores a Lease that is no readable report', () => {
    const { reports, heard } = setup();
    const broken = lease('peer-1', {}, 't0');
    (broken.metadata as { annotations: Record<string, string> }).annotations[REPLICA_REPORT_ANNOTATION] =
      'not json';
    reports.observe(broken);
    expect(reports.peerValues('ns/a')).toEqual([]);
    expect(heard).toEqual([]);
  });
});
