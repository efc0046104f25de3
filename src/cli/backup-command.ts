import type { Flags } from '../lib/flags.js';
import { packageVersion } from '../lib/package-version.js';
import { defineCommand, UsageError } from './command.js';

const DATA_DIR_FLAG = {
  'data-dir': {
    type: 'string',
    value: 'DIR',
    default: './edgeward-data',
    help: "the server's data directory (as given to edgeward server --data-dir)",
  },
} as const satisfies Flags;

const POSTGRES_NOTE = `On PostgreSQL (--database-url) the database is backed up with its own tools:
  pg_dump --format=custom --file=edgeward.dump "$DATABASE_URL"
  pg_restore --dbname="$NEW_DATABASE_URL" edgeward.dump
and EDGEWARD_SECRET_KEY is kept with it: the restored servers need the same key.`;

export const backupCommand = defineCommand({
  name: 'backup',
  summary: "copy a server's data directory (database and key) consistently, while it runs",
  usage: '[--data-dir DIR] OUT_DIR',
  description: `Writes a new directory OUT_DIR holding a consistent copy of the server's SQLite database
(SQLite's online backup API: the server may keep running and writing), the key that seals its
secrets (secret.key, or EDGEWARD_SECRET_KEY when set) and a manifest of digests. Without the key
every sealed secret (TLS and SSH private keys, event destination credentials, route module
secrets) and the edge key derived from it are lost: keep the whole directory, and keep it as
private as the data directory itself (mode 0700).`,
  flags: DATA_DIR_FLAG,
  positionals: true,
  footer: `${POSTGRES_NOTE}

environment:
  EDGEWARD_SECRET_KEY  the key, when the server is given it instead of DIR/secret.key`,
  run: async (values, positionals) => {
    const [out, ...extra] = positionals;
    if (!out || extra.length > 0) throw new UsageError('OUT_DIR: exactly one backup directory is required');
    const { backupDataDir } = await import('../server/backup/sqlite-backup.js');
    const { manifest, opened } = await backupDataDir({
      dataDir: values['data-dir'],
      out,
      secretKeyFromEnv: process.env.EDGEWARD_SECRET_KEY || undefined,
      edgewardVersion: packageVersion(),
    });
    const megabytes = (manifest.files['edgeward.sqlite'].bytes / 1024 / 1024).toFixed(1);
    process.stdout.write(
      `backed up ${values['data-dir']} into ${out}: edgeward.sqlite (${megabytes} MiB, ${manifest.migrations.length} migrations), secret.key (from ${manifest.key_source}), manifest.json\n` +
        `the key opens ${opened.edge_config_tls_private_keys} TLS private keys, ${opened.ssh_certificate_authority_keys} SSH CA keys, ${opened.event_destination_targets} event destination targets and ${opened.acme_account_keys} ACME account keys\n`,
    );
    return 0;
  },
});

export const restoreCommand = defineCommand({
  name: 'restore',
  summary: 'write a backup into a new data directory and check its secrets open',
  usage: 'BACKUP_DIR --data-dir NEW_DIR',
  description: `Writes the backup BACKUP_DIR (made by edgeward backup) into NEW_DIR, which must be new or
empty, and proves it serves: the files match the manifest, the database opens (migrating forward
when the backup is older than this release) and the key opens every sealed secret. Then start
edgeward server --data-dir NEW_DIR. On any failure NEW_DIR is left empty.`,
  flags: {
    'data-dir': {
      type: 'string',
      value: 'NEW_DIR',
      help: 'the new data directory (required)',
    },
  },
  positionals: true,
  footer: POSTGRES_NOTE,
  run: async (values, positionals) => {
    const [backup, ...extra] = positionals;
    if (!backup || extra.length > 0)
      throw new UsageError('BACKUP_DIR: exactly one backup directory is required');
    const dataDir = values['data-dir'];
    if (!dataDir) throw new UsageError('--data-dir: required (the new data directory)');
    const { restoreDataDir } = await import('../server/backup/sqlite-backup.js');
    const { manifest, opened } = await restoreDataDir({ backup, dataDir });
    process.stdout.write(
      `restored ${backup} (taken ${manifest.created_at} by edgeward ${manifest.edgeward_version}) into ${dataDir}\n` +
        `the key opens ${opened.edge_config_tls_private_keys} TLS private keys, ${opened.ssh_certificate_authority_keys} SSH CA keys, ${opened.event_destination_targets} event destination targets and ${opened.acme_account_keys} ACME account keys\n` +
        `start it: edgeward server --data-dir ${dataDir}\n`,
    );
    if (manifest.key_source === 'EDGEWARD_SECRET_KEY') {
      process.stdout.write(
        `(the backup's key came from EDGEWARD_SECRET_KEY; it is now also in ${dataDir}/secret.key, which the server uses when the variable is unset)\n`,
      );
    }
    return 0;
  },
});
