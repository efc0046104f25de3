import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SSH_HOST_KEY_FILE = 'ssh_host_ecdsa_key';

/**
 * The SSH endpoint's host key: the file given, or one generated once in the data directory
 * (ECDSA P-256 in SEC1 PEM, a form ssh2 reads), so OpenSSH clients see the same host on restart.
 */
export function loadSshHostKey(options: { file?: string | undefined; dataDir: string }): string {
  const path = sshHostKeyPath(options);
  if (options.file) return readFileSync(path, 'utf8');
  if (!existsSync(path)) {
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(path, privateKey.export({ type: 'sec1', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  }
  return readFileSync(path, 'utf8');
}

/** Where the SSH host key is read: the file given, or the one in the data directory. */
export function sshHostKeyPath(options: { file?: string | undefined; dataDir: string }): string {
  return options.file ?? join(options.dataDir, SSH_HOST_KEY_FILE);
}
