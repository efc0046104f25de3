import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SECRET_KEY_FILE = 'secret.key';

/**
 * The 32-byte key that seals secrets at rest. From `EDGEWARD_SECRET_KEY` (base64) when set — required
 * when several replicas share a PostgreSQL database — else a file in the data directory, created once
 * with mode 0600 (in a data directory made 0700 if new, as the server's first start makes it, so
 * `edgeward server --print-edge-key` works before that start). It is kept apart from the database so
 * a copied database file alone reveals no secret.
 */
export function loadSecretKey(dataDir: string, fromEnv: string | undefined): Buffer {
  if (fromEnv) {
    const key = Buffer.from(fromEnv, 'base64');
    if (key.length !== 32) throw new Error('EDGEWARD_SECRET_KEY must be 32 bytes, base64-encoded');
    return key;
  }
  const file = join(dataDir, SECRET_KEY_FILE);
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
  }
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} must hold 32 base64-encoded bytes`);
  return key;
}
