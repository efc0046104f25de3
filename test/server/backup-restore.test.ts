import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgewardClient } from '../../src/client/index.js';
import { spawnCli } from '../support/cli-process.js';
import { OpenSshWorkspace } from '../support/openssh.js';
import { OpensslWorkspace } from '../support/openssl.js';
import { type ServerProcess, spawnServer } from '../support/server-process.js';

/**
 * `edgeward backup` and `edgeward restore` as an operator runs them: a backup taken while the
 * server runs and writes, restored into a new data directory, served by a new server that lists
 * the same resources and opens the same secrets (a TLS private key the edges are sent, an SSH
 * CA's key that signs, an event destination's credentials).
 */
const ADMIN_KEY = `ewk_${randomBytes(24).toString('hex')}`;

async function cli(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawnCli(args);
  const [code] = (await once(child.child, 'exit')) as [number | null];
  return { code, output: child.output() };
}

/** Every credential's id, through the client's paging. */
async function idsOf(client: EdgewardClient): Promise<string[]> {
  const ids: string[] = [];
  for await (const credential of client.credentials.iterate({ limit: 100 })) ids.push(credential.id);
  return ids;
}

let work: string;
let openssl: OpensslWorkspace;
let openssh: OpenSshWorkspace;
let original: ServerProcess | undefined;
let restored: ServerProcess | undefined;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'edgeward-backup-'));
  openssl = new OpensslWorkspace();
  openssh = new OpenSshWorkspace();
});

afterAll(async () => {
  await original?.kill();
  await restored?.kill();
  rmSync(work, { recursive: true, force: true });
  openssl.cleanup();
  rmSync(openssh.dir, { recursive: true, force: true });
});

describe('edgeward backup and restore', () => {
  const dataDir = () => join(work, 'data');
  const backupDir = () => join(work, 'backup-1');

  it('backs up a running server while it writes, and a restore serves the same resources and opens the same secrets', async () => {
    original = await spawnServer(['--data-dir', dataDir()], { EDGEWARD_ADMIN_API_KEY: ADMIN_KEY });
    const client = new EdgewardClient({ baseUrl: original.listenUrl, apiKey: ADMIN_KEY });
    try {
      const leafKey = openssl.key('ec');
      const leaf = openssl.certificate({
        subject: '/CN=backup.example.com',
        key: leafKey,
        extensions: ['subjectAltName = DNS:backup.example.com'],
      });
      const certificate = await client.tlsCertificates.create({
        certificate_pem: leaf.pem,
        private_key_pem: leafKey.pem,
      });
      const authority = await client.sshCertificateAuthorities.create({ private_key_type: 'ed25519' });
      const destination = await client.eventDestinations.create({
        format: 'JSON',
        target: { datadog: { api_key: 'dd0123456789abcdef0123456789abcd' } },
      });
      const before = await client.credentials.create({ description: 'before the backup' });

      // Writes go on during the backup: the copy must be one committed state, not a torn one.
      let writing = true;
      const written: string[] = [];
      const writer = (async () => {
        while (writing) written.push((await client.credentials.create({ description: 'during' })).id);
      })();
      const backup = await cli(['backup', '--data-dir', dataDir(), backupDir()]);
      writing = false;
      await writer;
      expect(backup.code, backup.output).toBe(0);
      expect(backup.output).toMatch(
        /backed up .* into .*backup-1: edgeward\.sqlite \(.* MiB, \d+ migrations\), secret\.key \(from secret\.key\), manifest\.json\nthe key opens 1 TLS private keys, 1 SSH CA keys, 1 event destination targets and 0 ACME account keys/,
      );
      expect(readdirSync(backupDir()).sort()).toEqual(['edgeward.sqlite', 'manifest.json', 'secret.key']);
      expect(statSync(join(backupDir(), 'secret.key')).mode & 0o077).toBe(0);
      expect(readFileSync(join(backupDir(), 'secret.key'), 'utf8')).toBe(
        readFileSync(join(dataDir(), 'secret.key'), 'utf8').trim(),
      );
      expect(written.length).toBeGreaterThan(0);
      const finalIds = new Set(await idsOf(client));

      // The original goes away for good, as a lost disk would take it.
      await original.kill();
      original = undefined;

      const target = join(work, 'restored');
      const restore = await cli(['restore', backupDir(), '--data-dir', target]);
      expect(restore.code, restore.output).toBe(0);
      expect(restore.output).toContain(
        'the key opens 1 TLS private keys, 1 SSH CA keys, 1 event destination targets and 0 ACME account keys',
      );
      expect(restore.output).toContain(`start it: edgeward server --data-dir ${target}`);

      // No admin key given: the restored database holds the one the original was started with.
      restored = await spawnServer(['--data-dir', target]);
      const again = new EdgewardClient({ baseUrl: restored.listenUrl, apiKey: ADMIN_KEY });
      try {
        // The same resource; only its uri names the new server's address.
        const { uri: _uri, ...stored } = certificate;
        expect(await again.tlsCertificates.get(certificate.id)).toEqual({
          ...stored,
          uri: expect.any(String),
        });
        expect((await again.sshCertificateAuthorities.get(authority.id)).public_key).toBe(
          authority.public_key,
        );
        expect((await again.eventDestinations.get(destination.id)).target).toEqual(destination.target);
        const restoredIds = await idsOf(again);
        expect(restoredIds).toContain(before.id);
        // One committed state: everything restored existed, nothing restored is half a write.
        for (const id of restoredIds) expect(finalIds.has(id)).toBe(true);

        // The CA's private key opens in the restored server: it signs a host certificate that
        // OpenSSH verifies against the CA's public key.
        const host = openssh.keygen('ed25519');
        const signed = await again.sshHostCertificates.create({
          ssh_certificate_authority_id: authority.id,
          public_key: host.line,
          principals: ['restored.example.com'],
        });
        expect(openssh.listCertificate(signed.certificate).principals).toEqual(['restored.example.com']);
      } finally {
        await again.close();
      }

      // The edge key is derived from the secret key: the restored server's is the original's.
      const originalEdgeKey = await cli(['server', '--print-edge-key', '--data-dir', dataDir()]);
      const restoredEdgeKey = await cli(['server', '--print-edge-key', '--data-dir', target]);
      expect(restoredEdgeKey.output.trim()).toBe(originalEdgeKey.output.trim());
      expect(restoredEdgeKey.output.trim()).not.toBe('');
    } finally {
      await client.close();
    }
  }, 120_000);

  it('refuses to overwrite: a backup into an existing directory, a restore into a non-empty one', async () => {
    const again = await cli(['backup', '--data-dir', dataDir(), backupDir()]);
    expect(again.code).toBe(1);
    expect(again.output).toContain('already exists; give a new directory (nothing is overwritten)');

    const occupied = join(work, 'occupied');
    mkdirSync(occupied);
    writeFileSync(join(occupied, 'keep.txt'), 'mine');
    const restore = await cli(['restore', backupDir(), '--data-dir', occupied]);
    expect(restore.code).toBe(1);
    expect(restore.output).toContain('is not empty; give a new directory (nothing is overwritten)');
    expect(readdirSync(occupied)).toEqual(['keep.txt']);
  }, 60_000);

  it('refuses a backup whose key was swapped, and leaves the new data directory empty', async () => {
    const tampered = join(work, 'tampered');
    mkdirSync(tampered);
    for (const file of readdirSync(backupDir())) {
      writeFileSync(join(tampered, file), readFileSync(join(backupDir(), file)));
    }
    // A well-formed key of the wrong database: the manifest's digest no longer matches ...
    const otherKey = randomBytes(32).toString('base64');
    writeFileSync(join(tampered, 'secret.key'), otherKey);
    const target = join(work, 'from-tampered');
    const mismatch = await cli(['restore', tampered, '--data-dir', target]);
    expect(mismatch.code).toBe(1);
    expect(mismatch.output).toMatch(/secret\.key does not match the manifest/);

    // ... and with the manifest made to match, the key still opens none of the secrets.
    const manifest = JSON.parse(readFileSync(join(tampered, 'manifest.json'), 'utf8'));
    manifest.files['secret.key'].sha256 = createHash('sha256').update(otherKey).digest('hex');
    writeFileSync(join(tampered, 'manifest.json'), JSON.stringify(manifest));
    const wrongKey = await cli(['restore', tampered, '--data-dir', target]);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.output).toContain('the key does not open the TLS private keys and route secrets');
    expect(existsSync(target) ? readdirSync(target) : []).toEqual([]);
  }, 60_000);

  it('names the flag or argument a call gets wrong (exit 2)', async () => {
    const noOut = await cli(['backup', '--data-dir', dataDir()]);
    expect(noOut.code).toBe(2);
    expect(noOut.output).toContain('OUT_DIR: exactly one backup directory is required');
    const noDir = await cli(['restore', backupDir()]);
    expect(noDir.code).toBe(2);
    expect(noDir.output).toContain('--data-dir: required');
    // A key in the shell that is not the server's: refused before anything is written.
    const otherKey = spawnCli(['backup', '--data-dir', dataDir(), join(work, 'b-env')], {
      EDGEWARD_SECRET_KEY: randomBytes(32).toString('base64'),
    });
    const [envCode] = (await once(otherKey.child, 'exit')) as [number | null];
    expect(envCode).toBe(1);
    expect(otherKey.output()).toContain('EDGEWARD_SECRET_KEY differs from');
    expect(existsSync(join(work, 'b-env'))).toBe(false);
    const notData = await cli(['backup', '--data-dir', join(work, 'nothing-here'), join(work, 'b2')]);
    expect(notData.code).toBe(1);
    expect(notData.output).toContain('holds no edgeward.sqlite');
  }, 60_000);
});
