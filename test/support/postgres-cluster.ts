import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../src/dev-cluster/free-port.js';

const run = promisify(execFile);

/** The folder holding `initdb` and `postgres`, or a reason why there is none. */
export type PostgresBinaries = { dir: string } | { missing: string };

/** PATH first, then Debian's versioned folders (newest first), where `postgresql` installs them. */
export function findPostgresBinaries(): PostgresBinaries {
  const pathDirs = (process.env.PATH ?? '').split(':').filter(Boolean);
  const debian = '/usr/lib/postgresql';
  const versioned = existsSync(debian)
    ? readdirSync(debian)
        .filter((name) => /^\d+$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
        .map((version) => join(debian, version, 'bin'))
    : [];
  const dir = [...pathDirs, ...versioned].find((candidate) =>
    ['initdb', 'postgres'].every((tool) => existsSync(join(candidate, tool))),
  );
  if (dir) return { dir };
  return {
    missing: `no initdb and postgres found on PATH or in ${debian}/<version>/bin (install the postgresql package, or set EDGEWARD_TEST_POSTGRES_URL)`,
  };
}

/** Who runs initdb and postgres: undefined is this process's own user. */
type Owner = { uid: number; gid: number } | undefined;

/**
 * initdb and postgres refuse to run as root: then the cluster belongs to the `postgres` user (what
 * `runuser -u postgres` would do, as spawn options). Any other user runs them as itself.
 */
async function clusterOwner(): Promise<{ owner: Owner } | { missing: string }> {
  if (process.getuid?.() !== 0) return { owner: undefined };
  try {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    return { owner: { uid, gid } };
  } catch (error) {
    return { missing: `running as root, and no "postgres" user to own the test cluster (${String(error)})` };
  }
}

export interface TestCluster {
  /** Superuser URL of the `postgres` database, over TCP on 127.0.0.1. */
  adminUrl: string;
  /** Shuts postgres down, waits for it to exit and removes its folder. */
  stop(): Promise<void>;
}

/**
 * A throwaway cluster in a temporary folder: trust authentication, 127.0.0.1 only, durability off
 * (a crash loses nothing a test needs) unless `durable` (benchmarks compare like with like). Its default collation is ICU en-US, like most production
 * clusters, so a query that relies on byte order without asking for it shows up here. postgres
 * runs as a child of this process (not daemonized by pg_ctl), so stopping it is waiting for its exit.
 */
export async function startTestCluster(
  binaries: string,
  log: (line: string) => void,
  options: { durable?: boolean } = {},
): Promise<TestCluster | { missing: string }> {
  const found = await clusterOwner();
  if ('missing' in found) return found;
  const { owner } = found;
  const dir = mkdtempSync(join(tmpdir(), 'edgeward-postgres-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const asOwner = { ...owner, cwd: dir };
  const data = join(dir, 'data');
  const initdb = (extra: string[]) =>
    run(
      join(binaries, 'initdb'),
      ['-D', data, '-A', 'trust', '-U', 'edgeward', '--no-sync', '-E', 'UTF8', ...extra],
      asOwner,
    );
  try {
    try {
      await initdb(['--locale=C.UTF-8', '--locale-provider=icu', '--icu-locale=en-US']);
    } catch (error) {
      // PostgreSQL before 15, or built without ICU: the default locale still makes a real cluster.
      log(`initdb with an ICU collation failed, using the default locale (${firstLine(error)})`);
      rmSync(data, { recursive: true, force: true });
      await initdb([]);
    }
    // A port found free can be taken before postgres binds it: try a few.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      // Later lines win, so a retry only appends.
      appendFileSync(
        join(data, 'postgresql.conf'),
        [
          "listen_addresses = '127.0.0.1'",
          `port = ${port}`,
          `unix_socket_directories = '${dir}'`,
          ...(options.durable
            ? ['fsync = on', 'synchronous_commit = on', 'full_page_writes = on']
            : ['fsync = off', 'synchronous_commit = off', 'full_page_writes = off']),
          // Every test server has its own pool (up to 10 connections), and test files run in parallel.
          'max_connections = 400',
          '',
        ].join('\n'),
      );
      const adminUrl = `postgres://edgeward@127.0.0.1:${port}/postgres`;
      const server = spawn(join(binaries, 'postgres'), ['-D', data], {
        ...asOwner,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let output = '';
      server.stderr?.on('data', (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-20_000);
      });
      if (await becomesReady(server, adminUrl)) {
        return { adminUrl, stop: () => stopCluster(server, dir) };
      }
      await stopServer(server);
      if (attempt >= 3) throw new Error(`the test PostgreSQL cluster did not start:\n${output}`);
      log(`postgres did not start on port ${port}, trying another`);
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Until a connection succeeds (true), or postgres exits or 30 s pass (false). */
async function becomesReady(server: ChildProcess, adminUrl: string): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && server.exitCode === null && server.signalCode === null) {
    const client = new pg.Client({ connectionString: adminUrl });
    try {
      await client.connect();
      await client.end();
      return true;
    } catch {
      await client.end().catch(() => undefined);
      await sleep(100);
    }
  }
  return false;
}

/** SIGINT is PostgreSQL's fast shutdown; SIGKILL if it is still there after 20 s. */
async function stopServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = once(server, 'exit');
  server.kill('SIGINT');
  const timer = setTimeout(() => server.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

async function stopCluster(server: ChildProcess, dir: string): Promise<void> {
  try {
    await stopServer(server);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function firstLine(error: unknown): string {
  const stderr = (error as { stderr?: unknown } | null)?.stderr;
  return String(typeof stderr === 'string' && stderr ? stderr : error).split('\n')[0] ?? '';
}
