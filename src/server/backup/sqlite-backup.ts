import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
  createReadStream,
  existsSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { z } from 'zod';
import { SecretBox } from '../../crypto/secret-box.js';
import { loadSecretKey, SECRET_KEY_FILE } from '../../crypto/secret-key-file.js';
import { openDatabase, SQLITE_FILE } from '../store/database.js';
import { openSealedSecrets, type SealedSecretCounts } from './sealed-secrets.js';

/** A backup is a directory of these three files. */
export const MANIFEST_FILE = 'manifest.json';
const FORMAT = 'edgeward-backup/1';

const fileDigest = z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/), bytes: z.number().int().min(0) });
type FileDigest = z.infer<typeof fileDigest>;

const backupManifest = z.object({
  format: z.literal(FORMAT),
  edgeward_version: z.string(),
  created_at: z.string(),
  /** The migrations the copied database had run: the release that made it, in schema terms. */
  migrations: z.array(z.string()),
  /** Where the key came from: the data directory's file, or the environment. */
  key_source: z.enum(['secret.key', 'EDGEWARD_SECRET_KEY']),
  files: z.object({ [SQLITE_FILE]: fileDigest, [SECRET_KEY_FILE]: fileDigest }),
});
export type BackupManifest = z.infer<typeof backupManifest>;

/** Streamed: a database of any size, without holding it in memory. */
async function digest(file: string): Promise<FileDigest> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Takes a consistent copy of a server's SQLite database with `VACUUM INTO` — one read snapshot,
 * so the server may keep running and writing, however large the database — together with the key
 * that seals its secrets (without it every sealed secret and the derived edge key are lost) and a
 * manifest of digests, into a new directory. The copy is checked before the backup is called done:
 * SQLite's integrity check passes and the key opens every sealed secret in it.
 */
export async function backupDataDir(options: {
  dataDir: string;
  out: string;
  secretKeyFromEnv: string | undefined;
  edgewardVersion: string;
}): Promise<{ manifest: BackupManifest; opened: SealedSecretCounts }> {
  const source = join(options.dataDir, SQLITE_FILE);
  if (!existsSync(source)) {
    throw new Error(
      `--data-dir: ${options.dataDir} holds no ${SQLITE_FILE} (a server on PostgreSQL is backed up with pg_dump)`,
    );
  }
  const keyFile = join(options.dataDir, SECRET_KEY_FILE);
  if (!options.secretKeyFromEnv && !existsSync(keyFile)) {
    throw new Error(
      `--data-dir: ${options.dataDir} holds no ${SECRET_KEY_FILE} and EDGEWARD_SECRET_KEY is not set: without the key the backup could not open a single secret`,
    );
  }
  const key = loadSecretKey(options.dataDir, options.secretKeyFromEnv);
  if (
    options.secretKeyFromEnv &&
    existsSync(keyFile) &&
    !key.equals(loadSecretKey(options.dataDir, undefined))
  ) {
    throw new Error(
      `EDGEWARD_SECRET_KEY differs from ${keyFile}: give the key the server runs with (unset the variable if it uses the file)`,
    );
  }
  const out = resolve(options.out);
  if (existsSync(out))
    throw new Error(`${out} already exists; give a new directory (nothing is overwritten)`);
  mkdirSync(dirname(out), { recursive: true, mode: 0o700 });
  // Written beside the target and renamed at the end: a backup directory is whole or absent.
  const partial = mkdtempSync(join(dirname(out), `.${basename(out)}.partial-`));
  try {
    const copyFile = join(partial, SQLITE_FILE);
    const live = new SqliteDatabase(source, { fileMustExist: true });
    try {
      // The server's writer takes its locks for moments (a commit, a checkpoint): wait them out.
      live.pragma('busy_timeout = 10000');
      live.prepare('VACUUM INTO ?').run(copyFile);
    } finally {
      live.close();
    }
    chmodSync(copyFile, 0o600);
    writeFileSync(join(partial, SECRET_KEY_FILE), key.toString('base64'), { mode: 0o600 });
    const { migrations, opened } = await checkCopy(partial, key);
    const manifest: BackupManifest = {
      format: FORMAT,
      edgeward_version: options.edgewardVersion,
      created_at: new Date().toISOString(),
      migrations,
      key_source: options.secretKeyFromEnv ? 'EDGEWARD_SECRET_KEY' : 'secret.key',
      files: {
        [SQLITE_FILE]: await digest(copyFile),
        [SECRET_KEY_FILE]: await digest(join(partial, SECRET_KEY_FILE)),
      },
    };
    writeFileSync(join(partial, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    for (const file of [SQLITE_FILE, SECRET_KEY_FILE, MANIFEST_FILE]) fsyncPath(join(partial, file));
    fsyncPath(partial);
    if (existsSync(out)) throw new Error(`${out} appeared during the backup; nothing is overwritten`);
    renameSync(partial, out);
    fsyncPath(dirname(out));
    return { manifest, opened };
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Proves a copy in `dir` serves: SQLite's integrity check, the migrations it has run, and every
 * sealed secret opened with `key` through the server's own code.
 */
async function checkCopy(
  dir: string,
  key: Buffer,
): Promise<{ migrations: string[]; opened: SealedSecretCounts }> {
  const file = join(dir, SQLITE_FILE);
  const copy = new SqliteDatabase(file, { fileMustExist: true });
  let migrations: string[];
  try {
    const integrity = copy.pragma('integrity_check', { simple: true });
    if (integrity !== 'ok') throw new Error(`the copy fails SQLite's integrity check: ${String(integrity)}`);
    migrations = (
      copy.prepare('SELECT name FROM kysely_migration ORDER BY name').all() as Array<{ name: string }>
    ).map((row) => row.name);
  } finally {
    copy.close();
  }
  // The server's code opens the secrets from its own store, which writes (WAL files, migrations):
  // it gets a scratch copy, and the backup stays one untouched file.
  const scratch = mkdtempSync(join(tmpdir(), 'edgeward-backup-check-'));
  let opened: SealedSecretCounts;
  try {
    copyFileSync(file, join(scratch, SQLITE_FILE));
    const store = await openDatabase({ dataDir: scratch });
    try {
      opened = await openSealedSecrets(store.db, new SecretBox(key));
    } finally {
      await store.destroy();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return { migrations, opened };
}

export interface RestoreReport {
  manifest: BackupManifest;
  /** Sealed secrets the restored key opened, by kind. */
  opened: SealedSecretCounts;
}

function readManifest(backup: string): BackupManifest {
  const manifestFile = join(backup, MANIFEST_FILE);
  if (!existsSync(manifestFile)) throw new Error(`${backup} is not an edgeward backup (no ${MANIFEST_FILE})`);
  try {
    return backupManifest.parse(JSON.parse(readFileSync(manifestFile, 'utf8')));
  } catch (cause) {
    throw new Error(`${manifestFile} is not a ${FORMAT} manifest`, { cause });
  }
}

/**
 * Writes a backup into a new data directory and proves it serves: the files match the manifest,
 * the database opens (and migrates forward, when the backup is older than this release), and the
 * key opens every sealed secret the edges and event delivery need. Nothing in the directory is
 * overwritten; on a failure what the restore wrote is removed again.
 */
export async function restoreDataDir(options: { backup: string; dataDir: string }): Promise<RestoreReport> {
  const backup = resolve(options.backup);
  const manifest = readManifest(backup);
  for (const file of [SQLITE_FILE, SECRET_KEY_FILE] as const) {
    const expected = manifest.files[file];
    const path = join(backup, file);
    if (!existsSync(path)) throw new Error(`${backup} lacks ${file}`);
    const actual = await digest(path);
    if (actual.sha256 !== expected.sha256) {
      throw new Error(
        `${path} does not match the manifest (sha256 ${actual.sha256}, expected ${expected.sha256})`,
      );
    }
  }
  const dataDir = resolve(options.dataDir);
  const created = !existsSync(dataDir);
  if (!created && readdirSync(dataDir).length > 0) {
    throw new Error(`--data-dir: ${dataDir} is not empty; give a new directory (nothing is overwritten)`);
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const written = [SQLITE_FILE, SECRET_KEY_FILE].map((file) => join(dataDir, file));
  written.push(`${written[0]}-wal`, `${written[0]}-shm`);
  try {
    for (const file of [SQLITE_FILE, SECRET_KEY_FILE]) {
      // COPYFILE_EXCL: a file that appeared meanwhile is never replaced.
      copyFileSync(join(backup, file), join(dataDir, file), constants.COPYFILE_EXCL);
      chmodSync(join(dataDir, file), 0o600);
      fsyncPath(join(dataDir, file));
    }
    fsyncPath(dataDir);
    const store = await openDatabase({ dataDir });
    let opened: SealedSecretCounts;
    try {
      opened = await openSealedSecrets(store.db, new SecretBox(loadSecretKey(dataDir, undefined)));
    } finally {
      await store.destroy();
    }
    return { manifest, opened };
  } catch (error) {
    for (const file of written) rmSync(file, { force: true });
    if (created && readdirSync(dataDir).length === 0) rmdirSync(dataDir);
    throw error;
  }
}
