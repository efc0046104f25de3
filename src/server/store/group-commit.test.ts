import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Db } from './database.js';
import { GroupCommitter } from './group-commit.js';
import { SqliteConnection } from './sqlite-connection.js';

interface Scratch {
  notes: { id: string; text: string };
}

describe('GroupCommitter on a real SQLite file', () => {
  let dir: string;
  let db: Kysely<Scratch>;
  let commits: number;
  let connection: SqliteConnection;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'edgeward-group-commit-'));
    commits = 0;
    connection = new SqliteConnection(join(dir, 'db.sqlite'), { queryOnly: false });
    db = new Kysely<Scratch>({
      dialect: new SqliteDialect({
        database: connection,
      }),
      log: (event) => {
        if (event.level === 'query' && /^commit$/i.test(event.query.sql)) commits++;
      },
    });
    await sql`CREATE TABLE notes (id TEXT PRIMARY KEY, text TEXT NOT NULL)`.execute(db);
  });
  afterEach(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const committer = () => new GroupCommitter(db as unknown as Db);
  const insert = (trx: Db, id: string) =>
    (trx as unknown as Kysely<Scratch>).insertInto('notes').values({ id, text: id }).execute();
  const stored = async () =>
    (await db.selectFrom('notes').select('id').orderBy('id').execute()).map((r) => r.id);

  it('commits writes that arrive together once, and answers none before that commit', async () => {
    const group = committer();
    const answered: number[] = [];
    const writes = Array.from({ length: 20 }, (_, index) =>
      group
        .run(async (trx) => {
          await insert(trx, `n${String(index).padStart(2, '0')}`);
          return index;
        })
        .then((value) => {
          answered.push(commits);
          return value;
        }),
    );
    expect(await Promise.all(writes)).toEqual(Array.from({ length: 20 }, (_, index) => index));
    expect(commits).toBe(1);
    expect(answered.every((seen) => seen === 1)).toBe(true);
    expect(await stored()).toHaveLength(20);
  });

  it('rolls back only the write that failed; the others of its batch commit and see each other', async () => {
    const group = committer();
    const results = await Promise.allSettled([
      group.run((trx) => insert(trx, 'a')),
      group.run(async (trx) => {
        await insert(trx, 'b');
        throw new Error('refused after writing');
      }),
      // Sees 'a' of the same batch: a unique violation, as if 'a' had committed before it.
      group.run((trx) => insert(trx, 'a')),
      group.run((trx) => insert(trx, 'c')),
    ]);
    expect(results.map((result) => result.status)).toEqual([
      'fulfilled',
      'rejected',
      'rejected',
      'fulfilled',
    ]);
    expect(String((results[1] as PromiseRejectedResult).reason)).toContain('refused after writing');
    expect(String((results[2] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
    expect(await stored()).toEqual(['a', 'c']);
    expect(commits).toBe(1);
  });

  it('fails every write of a batch whose commit fails, and keeps none of them', async () => {
    const group = committer();
    // A deferred foreign key is checked at COMMIT: the whole batch's commit fails.
    await sql`CREATE TABLE refs (id TEXT PRIMARY KEY, note_id TEXT REFERENCES notes(id) DEFERRABLE INITIALLY DEFERRED)`.execute(
      db,
    );
    await sql`PRAGMA foreign_keys = ON`.execute(db);
    const results = await Promise.allSettled([
      group.run((trx) => insert(trx, 'x')),
      group.run((trx) => sql`INSERT INTO refs (id, note_id) VALUES ('r', 'missing')`.execute(trx)),
    ]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(await stored()).toEqual([]);
  });

  it('runs a write that arrives during a commit in the next one', async () => {
    const group = committer();
    const first = group.run((trx) => insert(trx, 'first'));
    await first;
    await group.run((trx) => insert(trx, 'second'));
    expect(await stored()).toEqual(['first', 'second']);
    expect(commits).toBe(2);
  });

  describe('with the log fsynced off the event loop', () => {
    /** A LogSync whose fsync finishes only when the test says so. */
    function heldSync() {
      const calls: { commitsBefore: number; finish: (error?: Error) => void }[] = [];
      return {
        calls,
        sync: () =>
          new Promise<void>((resolve, reject) => {
            calls.push({ commitsBefore: commits, finish: (error) => (error ? reject(error) : resolve()) });
          }),
      };
    }
    const synchronous = async () =>
      (await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(db)).rows[0]?.synchronous;
    const settledYet = async (promise: Promise<unknown>) =>
      Promise.race([
        promise.then(() => true),
        new Promise((resolve) => setTimeout(() => resolve(false), 50)),
      ]);

    it('answers no write before the fsync after its commit, and leaves the connection at FULL', async () => {
      const log = heldSync();
      const group = new GroupCommitter(db as unknown as Db, {
        log,
        inTransaction: () => connection.inTransaction,
      });
      const writes = Promise.all([
        group.run((trx) => insert(trx, 'a')),
        group.run((trx) => insert(trx, 'b')),
      ]);
      await vi.waitFor(() => expect(log.calls).toHaveLength(1));
      // Committed (another reader sees it), not yet answered.
      expect(log.calls[0]?.commitsBefore).toBe(1);
      expect(await stored()).toEqual(['a', 'b']);
      expect(await settledYet(writes)).toBe(false);
      // Event delivery, the edge feed and the janitor commit on this connection with SQLite's own fsync.
      expect(await synchronous()).toBe(2);
      log.calls[0]?.finish();
      await writes;
    });

    it('fails the writes of a batch whose fsync fails, and every write after it', async () => {
      const log = heldSync();
      const group = new GroupCommitter(db as unknown as Db, {
        log,
        inTransaction: () => connection.inTransaction,
      });
      const write = group.run((trx) => insert(trx, 'a'));
      await vi.waitFor(() => expect(log.calls).toHaveLength(1));
      log.calls[0]?.finish(new Error('EIO'));
      await expect(write).rejects.toThrow(/could not be fsynced/);
      expect(await synchronous()).toBe(2);
      // Linux may have dropped what it could not write and report the next fsync as a success.
      await expect(group.run((trx) => insert(trx, 'b'))).rejects.toThrow(/refused until a restart/);
      expect(group.broken?.cause).toEqual(new Error('EIO'));
    });

    it('restores FULL after a batch that failed', async () => {
      const log = heldSync();
      const group = new GroupCommitter(db as unknown as Db, {
        log,
        inTransaction: () => connection.inTransaction,
      });
      await expect(
        group.run(async () => {
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      expect(log.calls).toHaveLength(0);
      expect(await synchronous()).toBe(2);
    });
  });
});
