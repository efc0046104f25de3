import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface TestDatabase {
  /** URL of the new, empty database (same server and user as the admin URL). */
  url: string;
  drop(): Promise<void>;
}

async function asAdmin(adminUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A fresh database per test server, so tests never see each other's rows. */
export async function createTestDatabase(adminUrl: string): Promise<TestDatabase> {
  const name = `edgeward_test_${randomBytes(8).toString('hex')}`;
  await asAdmin(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    // FORCE: a pool the server failed to close must not keep the database alive.
    drop: () => asAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
