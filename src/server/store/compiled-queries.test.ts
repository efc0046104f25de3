import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCompiled, slot } from './compiled-queries.js';
import type { Db } from './database.js';
import { SqliteConnection } from './sqlite-connection.js';

interface Scratch {
  notes: { id: string; owner: string };
}

describe('runCompiled', () => {
  let db: Kysely<Scratch>;
  let compiles = 0;
  beforeAll(async () => {
    db = new Kysely<Scratch>({
      dialect: new SqliteDialect({ database: new SqliteConnection(':memory:', { queryOnly: false }) }),
    });
    await sql`CREATE TABLE notes (id TEXT PRIMARY KEY, owner TEXT NOT NULL)`.execute(db);
    await db
      .insertInto('notes')
      .values([
        { id: 'a', owner: 'x' },
        { id: 'b', owner: 'y' },
        { id: 'c', owner: 'x' },
      ])
      .execute();
  });
  afterAll(() => db.destroy());

  const byOwner = (owner: string, limit: number) =>
    runCompiled<{ id: string }>(
      db as unknown as Db,
      'test notes by owner',
      () => {
        compiles++;
        return db
          .selectFrom('notes')
          .select('id')
          .where('owner', '=', slot('owner'))
          .orderBy('id')
          .limit(slot('limit') as never);
      },
      { owner, limit },
    );

  it('compiles a shape once and runs it with each call’s values', async () => {
    expect((await byOwner('x', 10)).map((row) => row.id)).toEqual(['a', 'c']);
    expect((await byOwner('y', 10)).map((row) => row.id)).toEqual(['b']);
    expect((await byOwner('x', 1)).map((row) => row.id)).toEqual(['a']);
    expect(compiles).toBe(1);
  });

  it('refuses to run a slot it was given no value for', async () => {
    await expect(
      runCompiled(
        db as unknown as Db,
        'test notes missing',
        () => db.selectFrom('notes').select('id').where('id', '=', slot('id')),
        {},
      ),
    ).rejects.toThrow("no value for slot 'id'");
  });
});
