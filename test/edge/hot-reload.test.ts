import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { selfSignedCertificate } from '../../src/crypto/x509.js';
import { until } from '../support/eventually.js';
import { HaCluster } from '../support/ha-cluster.js';
import { haproxyMissing } from '../support/haproxy.js';
import { MountedSecret } from '../support/mounted-secret.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * The edge's own key material is re-read when its files change, as Kubernetes changes a mounted
 * Secret (a new folder and a swapped `..data` symlink): a real `edgeward edge` process started with
 * `--tunnel-cert`, `--tunnel-key` and `--ssh-host-key` pointing into such a folder, our agent holding
 * a session on it, and `openssl s_client` and `ssh-keyscan` reading what the edge serves.
 */
const run = promisify(execFile);
const HOST = 'reload.example.test';
let cluster: HaCluster;
let secret: MountedSecret;
let scratch: string;
const certificates: Array<{ cert: string; key: string; serial: string }> = [];
const hostKeys: string[] = [];

async function certificate(): Promise<{ cert: string; key: string; serial: string }> {
  const made = await selfSignedCertificate({
    commonName: 'localhost',
    dnsNames: ['localhost'],
    validDays: 2,
  });
  const file = join(scratch, `cert-${certificates.length}.pem`);
  writeFileSync(file, made.certificatePem);
  const { stdout } = await run('openssl', ['x509', '-noout', '-serial', '-in', file]);
  return { cert: made.certificatePem, key: made.privateKeyPem, serial: stdout.trim() };
}

function hostKey(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return String(privateKey.export({ type: 'sec1', format: 'pem' }));
}

/** The OpenSSH public key of a host key, as `ssh-keyscan` prints it (type and base64). */
async function publicOf(key: string): Promise<string> {
  const file = join(scratch, `host-key-${Date.now()}`);
  writeFileSync(file, key, { mode: 0o600 });
  const { stdout } = await run('ssh-keygen', ['-y', '-f', file]);
  return stdout.trim().split(' ').slice(0, 2).join(' ');
}

/** The serial of the certificate the tunnel endpoint presents now, as openssl reads it. */
async function servedSerial(): Promise<string> {
  const port = cluster.edges[0]?.ports.tunnel;
  const { stdout } = await run('sh', [
    '-c',
    `openssl s_client -connect 127.0.0.1:${port} -servername localhost -alpn edgeward-tunnel/2 </dev/null 2>/dev/null | openssl x509 -noout -serial`,
  ]);
  return stdout.trim();
}

/** The ECDSA host key the SSH endpoint offers now, as ssh-keyscan reads it. */
async function offeredHostKey(): Promise<string> {
  const port = cluster.edges[0]?.ports.ssh;
  const { stdout } = await run('ssh-keyscan', ['-T', '5', '-t', 'ecdsa', '-p', String(port), '127.0.0.1']);
  return stdout.trim().split(' ').slice(1, 3).join(' ');
}

const files = (index: number) => ({
  'tls.crt': certificates[index]?.cert ?? '',
  'tls.key': certificates[index]?.key ?? '',
  ssh_host_key: hostKeys[index] ?? '',
});

describeUnless(haproxyMissing, 'the edge reloads its certificate and host key from a mounted Secret', () => {
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'edgeward-reload-'));
    for (let index = 0; index < 2; index++) {
      certificates.push(await certificate());
      hostKeys.push(hostKey());
    }
    // Agents trust both certificates: the rotation needs no new agent configuration.
    const ca = join(scratch, 'agents-ca.pem');
    writeFileSync(ca, certificates.map((pair) => pair.cert).join(''));
    secret = new MountedSecret(files(0));
    cluster = await HaCluster.start({
      edges: 1,
      adminKey: 'ewk_hot_reload_admin_key_0123456789abcdefgh',
      drainDelaySeconds: 0,
      drainTimeoutSeconds: 2,
      edgeArgs: [
        '--tunnel-cert',
        secret.path('tls.crt'),
        '--tunnel-key',
        secret.path('tls.key'),
        '--ssh-host-key',
        secret.path('ssh_host_key'),
      ],
      edgeCa: ca,
    });
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    secret?.remove();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('serves the new tunnel certificate and SSH host key after the swap, keeping the session; a bad pair is refused', async () => {
    const credential = await cluster.api('POST', '/credentials', { acl: ['bind:app=*'] });
    await cluster.httpsEdge(HOST, { app: 'web' });
    cluster.startAgent(
      String(credential.token),
      'app=web',
      `http://127.0.0.1:${await cluster.service('kept')}`,
    );
    const [session] = await until(
      'the agent’s session',
      () => cluster.sessionsOf(String(credential.id)),
      (list) => list.length === 1,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(await servedSerial()).toBe(certificates[0]?.serial);
    expect(await offeredHostKey()).toBe(await publicOf(hostKeys[0] ?? ''));

    const edge = cluster.edges[0];
    if (!edge) throw new Error('no edge');
    secret.update(files(1));
    await edge.process.logLine(
      (line) => line.msg === 'reloaded the tunnel certificate: new agent connections get it, sessions stay',
      15_000,
    );
    await edge.process.logLine((line) => String(line.msg).startsWith('reloaded the SSH host key'), 15_000);
    expect(await servedSerial()).toBe(certificates[1]?.serial);
    expect(await offeredHostKey()).toBe(await publicOf(hostKeys[1] ?? ''));
    // The agent's session is the same one, and carries requests.
    expect((await cluster.sessionsOf(String(credential.id))).map((listed) => listed.id)).toEqual([
      session?.id,
    ]);
    const answer = await cluster.request(HOST);
    expect(answer.ok, answer.detail).toBe(true);
    expect(answer.body).toBe('kept');

    // A certificate with another pair's key: logged, and the current pair stays in use.
    secret.update({ ...files(1), 'tls.key': certificates[0]?.key ?? '' });
    const refused = await edge.process.logLine(
      (line) => String(line.msg).startsWith('kept the current tunnel certificate'),
      15_000,
    );
    expect(JSON.stringify(refused)).not.toContain('PRIVATE KEY');
    expect(await servedSerial()).toBe(certificates[1]?.serial);
  }, 90_000);
});
