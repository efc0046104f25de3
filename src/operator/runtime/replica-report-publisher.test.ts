import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeResourceClient } from '../../../test/support/fake/resource-client.js';
import type { Lease } from './leader-election.js';
import { silentLogger } from './logger.js';
import { parseReport, REPLICA_REPORT_LABEL, type ReportEntries } from './replica-report-lease.js';
import { ReplicaReportPublisher } from './replica-report-publisher.js';
import { LEASE } from './resource-types.js';

/** This replica's report Lease: when it is written, renewed and deleted. */

const NAME = 'edgeward-operator-replica-pod-a';

function setup() {
  const client = new FakeResourceClient<Lease>(LEASE);
  let entries: ReportEntries = {};
  const publisher = new ReplicaReportPublisher({
    client,
    namespace: 'ops',
    name: NAME,
    groupLabel: 'edgeward-operator',
    identity: 'pod-a_1234',
    durationMs: 15_000,
    renewMs: 5_000,
    minIntervalMs: 1_000,
    entries: () => entries,
    log: silentLogger,
  });
  const report = (next: ReportEntries) => {
    entries = next;
    publisher.changed();
  };
  const writes = () => client.requests.filter((request) => request.verb !== 'get').map((r) => r.verb);
  const stored = () => client.stored('ops', NAME);
  return { client, publisher, report, writes, stored };
}

describe('ReplicaReportPublisher', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes nothing while there is nothing to report, then one Lease the leader can read', async () => {
    const { publisher, report, writes, stored } = setup();
    publisher.changed();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(writes()).toEqual([]);

    report({ 'ns/web': ['ts_2', 'ts_1'] });
    await vi.advanceTimersByTimeAsync(0);
    expect(writes()).toEqual(['create']);
    const lease = stored() as Lease;
    expect(lease.metadata?.labels).toEqual({ [REPLICA_REPORT_LABEL]: 'edgeward-operator' });
    expect(parseReport(lease)).toMatchObject({
      identity: 'pod-a_1234',
      durationMs: 15_000,
      entries: { 'ns/web': ['ts_2', 'ts_1'] },
    });
  });

  it('writes a burst of changes at most once a second, and renews while it has something to say', async () => {
    const { report, writes, stored } = setup();
    report({ 'ns/a': ['ts_1'] });
    await vi.advanceTimersByTimeAsync(0);
    for (let flap = 0; flap < 10; flap++) {
      report(flap % 2 === 0 ? {} : { 'ns/a': [`ts_${flap}`] });
      await vi.advanceTimersByTimeAsync(50);
    }
    report({ 'ns/a': ['ts_last'] });
    await vi.advanceTimersByTimeAsync(1_000);
    // The first write, then one for the whole burst: its last state.
    expect(writes()).toEqual(['create', 'replace']);
    expect(parseReport(stored() as Lease)?.entries).toEqual({ 'ns/a': ['ts_last'] });

    const renewed = parseReport(stored() as Lease)?.renewTime;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(writes()).toEqual(['create', 'replace', 'replace']);
    expect(parseReport(stored() as Lease)?.renewTime).not.toBe(renewed);
  });

  it('deletes its report when nothing is left to say, and makes it again when something is', async () => {
    const { report, writes, stored } = setup();
    report({ 'ns/a': ['ts_1'] });
    await vi.advanceTimersByTimeAsync(0);
    report({});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(stored()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(writes()).toEqual(['create', 'delete']);
    report({ 'ns/b': ['ts_2'] });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(writes()).toEqual(['create', 'delete', 'create']);
  });

  it('writes its report again after the leader deleted it as stale', async () => {
    const { client, report, stored } = setup();
    report({ 'ns/a': ['ts_1'] });
    await vi.advanceTimersByTimeAsync(0);
    client.remove('ops', NAME);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(parseReport(stored() as Lease)?.entries).toEqual({ 'ns/a': ['ts_1'] });
  });

  it('tries a failed write again at the next renewal, not in a loop', async () => {
    const { client, report, writes, stored } = setup();
    let refusals = 3;
    client.intercept('create', () => {
      if (refusals-- > 0) throw Object.assign(new Error('forbidden'), { statusCode: 403 });
    });
    report({ 'ns/a': ['ts_1'] });
    await vi.advanceTimersByTimeAsync(9_999);
    expect(writes()).toEqual(['create', 'create']);
    await vi.advanceTimersByTimeAsync(5_001);
    expect(writes()).toEqual(['create', 'create', 'create', 'create']);
    expect(parseReport(stored() as Lease)?.entries).toEqual({ 'ns/a': ['ts_1'] });
  });

  it('deletes its report on stop, and writes nothing after', async () => {
    const { publisher, report, writes, stored } = setup();
    report({ 'ns/a': ['ts_1'] });
    await vi.advanceTimersByTimeAsync(0);
    await publisher.stop();
    expect(stored()).toBeUndefined();
    report({ 'ns/a': ['ts_2'] });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(writes()).toEqual(['create', 'delete']);
  });
});
