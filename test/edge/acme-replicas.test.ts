import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/dev-cluster/free-port.js';
import { adminApi } from '../support/admin-api.js';
import { type CliProcess, killAll, spawnCli } from '../support/cli-process.js';
import { waitFor } from '../support/eventually.js';
import { type Pebble, pebbleUnavailable, startPebble } from '../support/pebble.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres-database.js';
import { projectStore } from '../support/server.js';

/**
 * Two `edgeward server` replicas with ACME on, as separate processes on one PostgreSQL database,
 * and one edge fed by both: each certificate is ordered by one replica only (its lease), the
 * account key is one, and every name is issued once.
 */
const ADMIN_KEY = 'ewk_acme_replicas_admin_key_0123456789abc';
const NAMES = ['one.replicas.acme.test', 'two.replicas.acme.test', 'three.replicas.acme.test'];

const processes: CliProcess[] = [];
let database: TestDatabase | undefined;
let pebble: Pebble | undefined;
let dataDir: string;
let replicas: Array<{ process: CliProcess; url: string }> = [];

describe('ACME with two server replicas on PostgreSQL', () => {
  beforeEach((context) => {
    context.skip(projectStore() === 'sqlite', 'replicas share a PostgreSQL database (the postgres project)');
  });

  beforeAll(async () => {
    if (projectStore() === 'sqlite') return;
    const skip = await pebbleUnavailable();
    if (skip) throw new Error(skip);
    const tlsPort = await freePort();
    pebble = await startPebble({ httpPort: await freePort(), tlsPort, keyAlgorithm: 'ecdsa' });
    database = await createTestDatabase(inject('postgresUrl') as string);
    dataDir = mkdtempSync(join(tmpdir(), 'edgeward-acme-replicas-'));
    const bundle = join(dataDir, 'pebble-minica.pem');
    writeFileSync(bundle, pebble.caBundlePem);
    const env = {
      EDGEWARD_ADMIN_API_KEY: ADMIN_KEY,
      EDGEWARD_SECRET_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'info',
    };
    const acme = [
      ...['--acme-directory-url', pebble.directoryUrl, '--acme-email', 'certificates@example.com'],
      ...['--acme-ca-bundle', bundle, '--acme-challenges', 'tls-alpn-01', '--acme-retry-min', '1'],
    ];
    for (const name of ['a', 'b']) {
      const replica = spawnCli(
        ['server', '--database-url', database.url, '--data-dir', join(dataDir, name), '--port', '0', ...acme],
        env,
      );
      processes.push(replica);
      const ready = await replica.logLine((line) => line.msg === 'edgeward server ready', 60_000);
      replicas.push({ process: replica, url: String(ready.listen) });
    }
    const printed = spawnCli(['server', '--database-url', database.url, '--print-edge-key'], env);
    await once(printed.child, 'exit');
    const edge = spawnCli(
      [
        ...['edge', '--api-url', replicas.map((replica) => replica.url).join(',')],
        ...['--data-dir', join(dataDir, 'edge'), '--tunnel-addr', '127.0.0.1:0'],
        ...['--tls-addr', `127.0.0.1:${tlsPort}`, '--ssh-addr', 'off', '--relay-addr', 'off'],
        ...['--metrics-addr', 'off', '--tcp-port-range', '1-9'],
      ],
      { EDGEWARD_EDGE_KEY: printed.output().trim() },
    );
    processes.push(edge);
    await edge.logLine((line) => line.msg === 'edgeward edge ready', 60_000);
  }, 180_000);

  afterAll(async () => {
    await killAll(processes.map((process) => process.child));
    await pebble?.stop();
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    replicas = [];
  });

  it('orders each certificate once, from whichever replica holds its lease', async () => {
    const [first, second] = replicas.map((replica) => adminApi(() => replica.url, ADMIN_KEY));
    if (!first || !second) throw new Error('two replicas expected');
    // Created through both replicas at once: both wake for every change.
    await Promise.all(
      NAMES.map((name, index) =>
        (index % 2 === 0 ? first : second)('POST', '/edges/https', { hostports: [`${name}:443`] }),
      ),
    );
    const issued = () =>
      first('GET', '/tls_certificates').then((listed) =>
        (
          listed.tls_certificates as Array<{
            issued_at: string | null;
            subject_alternative_names: { dns_names: string[] };
          }>
        ).filter((certificate) => certificate.issued_at !== null),
      );
    await waitFor(async () => (await issued()).length === NAMES.length, {
      what: 'a certificate for every name',
      timeoutMs: 60_000,
      intervalMs: 250,
      detail: () => replicas.map((replica) => replica.process.output().slice(-2000)).join('\n'),
    });
    const names = (await issued()).flatMap((certificate) => certificate.subject_alternative_names.dns_names);
    expect(names.sort()).toEqual([...NAMES].sort());
    const lines = replicas.flatMap((replica) => replica.process.output().split('\n'));
    // One order per name across both replicas, and one issuance each.
    for (const name of NAMES) {
      expect(lines.filter((line) => line.includes(`ACME certificates: ${name}: new order`))).toHaveLength(1);
      expect(lines.filter((line) => line.includes(`ACME certificates: issued ${name}`))).toHaveLength(1);
    }
    // One account, shared: its key is the first replica's to insert.
    const client = new pg.Client({ connectionString: database?.url });
    await client.connect();
    try {
      const accounts = await client.query('SELECT count(*)::int AS count FROM acme_accounts');
      expect(accounts.rows).toEqual([{ count: 1 }]);
    } finally {
      await client.end();
    }
  });
});
