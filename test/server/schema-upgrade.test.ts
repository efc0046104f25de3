import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { type RunningServer, startServer } from '../../src/server/start.js';
import { SQLITE_FILE } from '../../src/server/store/database.js';
import { MIGRATION_NAMES, migrationProvider } from '../../src/server/store/migrations/index.js';
import { SqliteConnection } from '../../src/server/store/sqlite-connection.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres-database.js';
import { ADMIN_KEY } from '../support/server.js';

/**
 * Upgrades as a user meets them, on the project's store: a database left by the previous release
 * (migrated only that far, with its rows) is migrated forward on start and serves those rows; a
 * database migrated by a newer release is refused with a message that says what to do.
 */

const PREVIOUS_RELEASE = MIGRATION_NAMES.at(-2) as string;
const postgresUrl = inject('postgresUrl') as string | undefined;

let dataDir: string;
let database: TestDatabase | undefined;
let running: RunningServer | undefined;
const secretKey = randomBytes(32).toString('base64');

/** A bare connection to the store, as an older release's migrator would have used it. */
function rawDb(): Kysely<Record<string, Record<string, unknown>>> {
  if (database) {
    return new Kysely({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url }) }),
    });
  }
  return new Kysely({
    dialect: new SqliteDialect({
      database: new SqliteConnection(join(dataDir, SQLITE_FILE), { queryOnly: false }),
    }),
  });
}

const start = () =>
  startServer({
    dataDir,
    databaseUrl: database?.url,
    secretKey: database ? secretKey : undefined,
    host: '127.0.0.1',
    port: 0,
    adminApiKey: ADMIN_KEY,
    logger: false,
  });

beforeEach(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'edgeward-upgrade-'));
  database = postgresUrl ? await createTestDatabase(postgresUrl) : undefined;
});

afterEach(async () => {
  await running?.app.close();
  running = undefined;
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the server’s database across releases', () => {
  it(`migrates a database of the previous release (${PREVIOUS_RELEASE}) forward and serves its rows`, async () => {
    const old = rawDb();
    try {
      const { error } = await new Migrator({ db: old, provider: migrationProvider }).migrateTo(
        PREVIOUS_RELEASE,
      );
      expect(error).toBeUndefined();
      await old
        .insertInto('ip_policies')
        .values({
          id: 'ipp_2fZ9yA6QnDk8Qb1cMxV0aRtLp3W',
          created_at: '2026-11-01T10:00:00Z',
          description: 'made by the previous release',
          metadata: '',
        })
        .execute();
      await old
        .insertInto('ip_policy_rules')
        .values({
          id: 'ipr_2fZ9yA6QnDk8Qb1cMxV0aRtLp3W',
          created_at: '2026-11-01T10:00:00Z',
          description: '',
          metadata: '',
          ip_policy_id: 'ipp_2fZ9yA6QnDk8Qb1cMxV0aRtLp3W',
          cidr: '10.0.0.0/8',
          action: 'allow',
        })
        .execute();
    } finally {
      await old.destroy();
    }

    running = await start();
    const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'svc-version': '2' };
    const policy = await fetch(`${running.listenUrl}/ip_policies/ipp_2fZ9yA6QnDk8Qb1cMxV0aRtLp3W`, {
      headers,
    });
    expect(policy.status).toBe(200);
    expect(await policy.json()).toMatchObject({ description: 'made by the previous release' });
    const rule = await fetch(`${running.listenUrl}/ip_policy_rules/ipr_2fZ9yA6QnDk8Qb1cMxV0aRtLp3W`, {
      headers,
    });
    expect(await rule.json()).toMatchObject({ cidr: '10.0.0.0/8', action: 'allow' });
    // The newest migration ran too: its tables answer.
    const created = await fetch(`${running.listenUrl}/ip_policies`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ description: 'made after the upgrade' }),
    });
    expect(created.status).toBe(201);
  });

  it('keeps answering reads while a newer replica’s migration adds a column (a rolling upgrade)', async () => {
    running = await start();
    const { listenUrl } = running;
    const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'svc-version': '2' };
    const created = await fetch(`${listenUrl}/ip_policies`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ description: 'read across the upgrade' }),
    });
    const { id } = (await created.json()) as { id: string };
    // Concurrent, so that on PostgreSQL several pooled connections prepare the reads first.
    const readAll = () =>
      Promise.all([
        ...Array.from({ length: 8 }, () => fetch(`${listenUrl}/ip_policies/${id}`, { headers })),
        ...Array.from({ length: 4 }, () => fetch(`${listenUrl}/ip_policies?limit=5`, { headers })),
      ]);
    for (const response of await readAll()) expect(response.status).toBe(200);

    const db = rawDb();
    try {
      await sql`alter table ip_policies add column from_a_newer_release text`.execute(db);
    } finally {
      await db.destroy();
    }

    const responses = await readAll();
    const bodies = await Promise.all(responses.map((response) => response.json()));
    expect(responses.map((response) => response.status)).toEqual(responses.map(() => 200));
    for (const body of bodies.slice(0, 8))
      expect(body).toMatchObject({ id, description: 'read across the upgrade' });
    for (const body of bodies.slice(8) as { ip_policies: { id: string }[] }[])
      expect(body.ip_policies.map((policy) => policy.id)).toContain(id);
  });

  it('refuses a database a newer release migrated, naming what it found and what to do', async () => {
    running = await start();
    await running.app.close();
    running = undefined;
    const db = rawDb();
    try {
      await sql`insert into kysely_migration (name, timestamp) values ('999-from-a-newer-release', '2027-01-01T00:00:00Z')`.execute(
        db,
      );
    } finally {
      await db.destroy();
    }
    await expect(start()).rejects.toThrow(
      `the database was migrated by a newer edgeward (it has 999-from-a-newer-release; this release knows up to ${MIGRATION_NAMES.at(-1)}): run that newer release, or restore the backup taken before the upgrade`,
    );
  });
});
