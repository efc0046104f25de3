import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { SecretBox } from '../../crypto/secret-box.js';
import { loadSecretKey, SECRET_KEY_FILE } from '../../crypto/secret-key-file.js';
import { openDatabase, SQLITE_FILE } from '../store/database.js';
import { openSealedSecrets, type SealedSecretCounts } from './sealed-secrets.js';

/** A backup is a directory of these three files. */
export const MANIFEST_FILE = 'manifest.json';
const FORMAT = 'edgeward-backup/1';

interface FileDigest {
  sha256: string;
  bytes: number;
}

export interface BackupManifest {
  format: typeof FORMAT;
  edgeward_version: string;
  created_at: string;
  /** The migrations the copied database had run: the release that made it, in schema terms. */
  migrations: string[];
  /** Where the key came from: the data directory's file, or the environment. */
  key_source: 'secret.key' | 'EDGEWARD_SECRET_KEY';
  files: { [SQLITE_FILE]: FileDigest; [SECRET_KEY_FILE]: FileDigest };
}

function digest(file: string): FileDigest {
  const content = readFileSync(file);
  return { sha256: createHash('sha256').update(content).digest('hex'), bytes: content.length };
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A directory that is absent or empty, created (mode 0700); anything else is refused by `what`. */
function emptyDirectory(dir: string, what: string): void {
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new Error(`${what}: ${dir} is not empty; give a new directory (nothing is overwritten)`);
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/**
 * Takes a consistent copy of a server's SQLite database with SQLite's online backup API — the
 * server may keep running and writing; the copy is one committed state — together with the key
 * that seals its secrets (without it every sealed secret and the derived edge key are lost) and a
 * manifest of digests, into a new directory. The copy is checked before the backup is called done:
 * SQLite's integrity check passes and the key is 32 bytes.
 */
export async function backupDataDir(options: {
  dataDir: string;
  out: string;
  secretKeyFromEnv: string | undefined;
  edgewardVersion: string;
}): Promise<BackupManifest> {
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
  const out = resolve(options.out);
  // Written beside the target and renamed at the end: a backup directory is whole or absent.
  const partial = join(dirname(out), `.${basename(out)}.partial`);
  if (existsSync(out))
    throw new Error(`${out} already exists; give a new directory (nothing is overwritten)`);
  rmSync(partial, { recursive: true, force: true });
  emptyDirectory(partial, 'backup');
  try {
    const live = new SqliteDatabase(source, { readonly: true, fileMustExist: true });
    try {
      await live.backup(join(partial, SQLITE_FILE));
    } finally {
      live.close();
    }
    const copy = new SqliteDatabase(join(partial, SQLITE_FILE), { fileMustExist: true });
    let migrations: string[];
    try {
      const integrity = copy.pragma('integrity_check', { simple: true });
      if (integrity !== 'ok')
        throw new Error(`the copy fails SQLite's integrity check: ${String(integrity)}`);
      // A copy taken in WAL mode says so in its header; a backup is one self-contained file.
      copy.pragma('journal_mode = DELETE');
      migrations = (
        copy.prepare('SELECT name FROM kysely_migration ORDER BY name').all() as Array<{ name: string }>
      ).map((row) => row.name);
    } finally {
      copy.close();
    }
    writeFileSync(join(partial, SECRET_KEY_FILE), key.toString('base64'), { mode: 0o600 });
    const manifest: BackupManifest = {
      format: FORMAT,
      edgeward_version: options.edgewardVersion,
      created_at: new Date().toISOString(),
      migrations,
      key_source: options.secretKeyFromEnv ? 'EDGEWARD_SECRET_KEY' : 'secret.key',
      files: {
        [SQLITE_FILE]: digest(join(partial, SQLITE_FILE)),
        [SECRET_KEY_FILE]: digest(join(partial, SECRET_KEY_FILE)),
      },
    };
    writeFileSync(join(partial, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    for (const file of [SQLITE_FILE, SECRET_KEY_FILE, MANIFEST_FILE]) fsyncPath(join(partial, file));
    fsyncPath(partial);
    renameSync(partial, out);
    fsyncPath(dirname(out));
    return manifest;
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    throw error;
  }
}

export interface RestoreReport {
  manifest: BackupManifest;
  /** Sealed secrets the restored key opened, by kind. */
  opened: SealedSecretCounts;
}

/**
 * Writes a backup into a new data directory and proves it serves: the files match the manifest,
 * the database opens (and migrates forward, when the backup is older than this release), and the
 * key opens every sealed secret the edges and event delivery need. On any failure the data
 * directory is left as it was found (absent or empty).
 */
export async function restoreDataDir(options: { backup: string; dataDir: string }): Promise<RestoreReport> {
  const backup = resolve(options.backup);
  const manifestFile = join(backup, MANIFEST_FILE);
  if (!existsSync(manifestFile)) throw new Error(`${backup} is not an edgeward backup (no ${MANIFEST_FILE})`);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as BackupManifest;
  if (manifest.format !== FORMAT) {
    throw new Error(`${manifestFile}: format '${String(manifest.format)}' is not ${FORMAT}`);
  }
  for (const file of [SQLITE_FILE, SECRET_KEY_FILE] as const) {
    const expected = manifest.files[file];
    const path = join(backup, file);
    if (!existsSync(path)) throw new Error(`${backup} lacks ${file}`);
    const actual = digest(path);
    if (actual.sha256 !== expected.sha256) {
      throw new Error(
        `${path} does not match the manifest (sha256 ${actual.sha256}, expected ${expected.sha256})`,
      );
    }
  }
  const dataDir = resolve(options.dataDir);
  emptyDirectory(dataDir, '--data-dir');
  try {
    writeFileSync(join(dataDir, SQLITE_FILE), readFileSync(join(backup, SQLITE_FILE)), { mode: 0o600 });
    writeFileSync(join(dataDir, SECRET_KEY_FILE), readFileSync(join(backup, SECRET_KEY_FILE)), {
      mode: 0o600,
    });
    fsyncPath(join(dataDir, SQLITE_FILE));
    fsyncPath(join(dataDir, SECRET_KEY_FILE));
    fsyncPath(dataDir);
    const store = await openDatabase({ dataDir });
    try {
      const opened = await openSealedSecrets(store.db, new SecretBox(loadSecretKey(dataDir, undefined)));
      return { manifest, opened };
    } finally {
      await store.destroy();
    }
  } catch (error) {
    for (const entry of readdirSync(dataDir)) rmSync(join(dataDir, entry), { recursive: true, force: true });
    throw error;
  }
}
