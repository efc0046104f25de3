import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WalSync } from './wal-sync.js';

describe('WalSync', () => {
  let dir: string;
  let log: string;
  let fsyncs: { started: number; finished: number }[];
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'edgeward-wal-sync-'));
    log = join(dir, 'db.sqlite-wal');
    writeFileSync(log, 'frames');
    fsyncs = [];
    // Every fsync goes through FileHandle.prototype.sync: count them and when each ran.
    const probe = await open(log, 'r');
    const prototype = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const realSync = prototype.sync;
    vi.spyOn(prototype, 'sync').mockImplementation(async function (this: unknown) {
      const record = { started: performance.now(), finished: Number.NaN };
      fsyncs.push(record);
      await realSync.call(this);
      record.finished = performance.now();
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a call only after an fsync that began after it', async () => {
    const sync = new WalSync(log);
    const first = sync.sync();
    const calledDuring = performance.now();
    const second = sync.sync();
    await Promise.all([first, second]);
    expect(fsyncs).toHaveLength(2);
    expect(fsyncs[1]?.started).toBeGreaterThanOrEqual(calledDuring);
    await sync.close();
  });

  it('lets the calls made during one fsync share the next', async () => {
    const sync = new WalSync(log);
    const calls = [sync.sync(), ...Array.from({ length: 20 }, () => sync.sync())];
    await Promise.all(calls);
    expect(fsyncs).toHaveLength(2);
    await sync.sync();
    expect(fsyncs).toHaveLength(3);
    await sync.close();
  });

  it('names the log when the fsync cannot happen, and tries again on the next call', async () => {
    const sync = new WalSync(join(dir, 'missing-wal'));
    await expect(sync.sync()).rejects.toThrow(/fsync of .*missing-wal failed/);
    writeFileSync(join(dir, 'missing-wal'), 'frames');
    await sync.sync();
    expect(fsyncs).toHaveLength(1);
    await sync.close();
  });

  it('waits at close for the fsyncs asked for, and refuses any after', async () => {
    const sync = new WalSync(log);
    const asked = [sync.sync(), sync.sync()];
    await sync.close();
    expect(fsyncs.every((fsync) => Number.isFinite(fsync.finished))).toBe(true);
    await Promise.all(asked);
    await expect(sync.sync()).rejects.toThrow(/after the store was closed/);
  });
});
