import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EDGE_FEED_PATH } from '../../src/schemas/edge-config.js';
import { spawnCli } from '../support/cli-process.js';
import { until, waitFor } from '../support/eventually.js';
import { MountedSecret } from '../support/mounted-secret.js';
import { OpensslWorkspace } from '../support/openssl.js';
import { projectStore } from '../support/server.js';
import { type ServerProcess, spawnServer } from '../support/server-process.js';

// These start the CLI on a SQLite data directory (key bootstrap, kill -9 durability, HTTPS); the
// postgres project runs every route in-process instead, so here it has nothing to add.
beforeEach((context) => {
  context.skip(projectStore() === 'postgres', 'process tests run the CLI on SQLite only');
});

const running: ServerProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const server of running.splice(0)) await server.kill();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'edgeward-process-'));
  dirs.push(dir);
  return dir;
}

async function start(args: string[], env: Record<string, string | undefined> = {}, wrapper: string[] = []) {
  const server = await spawnServer(args, env, undefined, wrapper);
  running.push(server);
  return server;
}

function call(
  baseUrl: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  dispatcher?: Agent,
) {
  return fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      'svc-version': '2',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    dispatcher,
  });
}

// Each test starts the CLI through tsx, which takes a while on a loaded machine.
describe('edgeward server (as a process)', { timeout: 120_000 }, () => {
  it('generates an admin key once, prints it once, and stores only its hash', async () => {
    const dataDir = tempDir();
    const first = await start(['--data-dir', dataDir], { EDGEWARD_ADMIN_API_KEY: undefined });
    const key = /Generated admin API key[^\n]*\n\s+(ewk_\S+)/.exec(first.stdout())?.[1];
    expect(key).toBeDefined();
    expect((await call(first.listenUrl, key!, 'GET', '/ip_policies')).status).toBe(200);
    await first.kill('SIGTERM');
    const sqlite = readFileSync(join(dataDir, 'edgeward.sqlite'));
    const wal = readFileSync(join(dataDir, 'edgeward.sqlite-wal'), { flag: 'a+' });
    expect(Buffer.concat([sqlite, wal]).includes(key!)).toBe(false);

    const second = await start(['--data-dir', dataDir], { EDGEWARD_ADMIN_API_KEY: undefined });
    expect(second.stdout()).not.toContain('Generated admin API key');
    expect((await call(second.listenUrl, key!, 'GET', '/ip_policies')).status).toBe(200);
  });

  it('loses no acknowledged write when killed with SIGKILL', async () => {
    const dataDir = tempDir();
    const env = { EDGEWARD_ADMIN_API_KEY: 'ewk_kill_test_0123456789abcdefghijkl' };
    const first = await start(['--data-dir', dataDir], env);
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const response = await call(
        first.listenUrl,
        'ewk_kill_test_0123456789abcdefghijkl',
        'POST',
        '/ip_policies',
        {
          description: `p${i}`,
        },
      );
      expect(response.status).toBe(201);
      ids.push(((await response.json()) as { id: string }).id);
    }
    await first.kill('SIGKILL');
    const second = await start(['--data-dir', dataDir], env);
    for (const id of ids) {
      expect(
        (await call(second.listenUrl, 'ewk_kill_test_0123456789abcdefghijkl', 'GET', `/ip_policies/${id}`))
          .status,
      ).toBe(200);
    }
  });

  it('loses no acknowledged write when killed with SIGKILL under concurrent load (commits shared)', async () => {
    const dataDir = tempDir();
    const key = 'ewk_kill_load_0123456789abcdefghijkl';
    const first = await start(['--data-dir', dataDir, '--rate-limit', '0'], { EDGEWARD_ADMIN_API_KEY: key });
    const dispatcher = new Agent({ connections: 32 });
    const acknowledged: string[] = [];
    let stopped = false;
    // 24 writers at once: their requests share commits (group commit), and the kill lands while
    // some are queued, some inside a shared transaction and some waiting for its fsync.
    const writer = async (index: number) => {
      for (let n = 0; !stopped; n++) {
        try {
          const response = await call(
            first.listenUrl,
            key,
            'POST',
            '/ip_policies',
            { description: `w${index}-${n}` },
            dispatcher,
          );
          if (response.status === 201) acknowledged.push(((await response.json()) as { id: string }).id);
          else await response.body?.cancel();
        } catch {
          return; // the connection died with the server: this write was never acknowledged
        }
      }
    };
    const writers = Array.from({ length: 24 }, (_, index) => writer(index));
    await waitFor(() => acknowledged.length >= 300, {
      what: '300 acknowledged writes',
      timeoutMs: 60_000,
      intervalMs: 10,
    });
    await first.kill('SIGKILL');
    stopped = true;
    await Promise.all(writers);
    await dispatcher.close();
    const countAtKill = acknowledged.length;

    const second = await start(['--data-dir', dataDir], { EDGEWARD_ADMIN_API_KEY: key });
    const stored = new Set<string>();
    for (let cursor: string | undefined; ; ) {
      const page = (await (
        await call(
          second.listenUrl,
          key,
          'GET',
          `/ip_policies?limit=100${cursor ? `&before_id=${cursor}` : ''}`,
        )
      ).json()) as { ip_policies: { id: string }[]; next_page_uri: string | null };
      for (const policy of page.ip_policies) stored.add(policy.id);
      if (!page.next_page_uri) break;
      cursor = page.ip_policies.at(-1)?.id;
    }
    const lost = acknowledged.filter((id) => !stored.has(id));
    console.log(
      `SIGKILL under load: ${countAtKill} writes acknowledged, ${stored.size} stored, ${lost.length} lost`,
    );
    expect(lost).toEqual([]);
  });

  it('serves HTTPS when given a certificate and key, and the new pair once their files change', async () => {
    const dir = tempDir();
    const openssl = new OpensslWorkspace();
    /** A self-signed pair for localhost and 127.0.0.1, and its serial as openssl prints it. */
    const pair = () => {
      const cert = openssl.certificate({
        subject: '/CN=localhost',
        key: openssl.key('ec'),
        extensions: ['subjectAltName = IP:127.0.0.1,DNS:localhost'],
        days: 1,
      });
      const serial = execFileSync('openssl', ['x509', '-noout', '-serial', '-in', cert.path], {
        encoding: 'utf8',
      });
      return { cert: cert.pem, key: cert.key.pem, serial: serial.trim() };
    };
    const first = pair();
    // Mounted as Kubernetes mounts a Secret: a renewal swaps a symlink, the paths never change.
    const secret = new MountedSecret({ 'tls.crt': first.cert, 'tls.key': first.key });
    const server = await start(
      [
        '--data-dir',
        join(dir, 'data'),
        '--tls-cert',
        secret.path('tls.crt'),
        '--tls-key',
        secret.path('tls.key'),
      ],
      { EDGEWARD_ADMIN_API_KEY: 'ewk_tls_test_0123456789abcdefghijklm' },
    );
    try {
      expect(server.listenUrl.startsWith('https://')).toBe(true);
      const agent = new Agent({ connect: { ca: first.cert } });
      const response = await call(
        server.listenUrl,
        'ewk_tls_test_0123456789abcdefghijklm',
        'POST',
        '/ip_policies',
        {},
        agent,
      );
      expect(response.status).toBe(201);
      const body = (await response.json()) as { uri: string };
      expect(body.uri.startsWith(`${server.listenUrl}/ip_policies/`)).toBe(true);
      await agent.close();

      const served = () =>
        execFileSync(
          'sh',
          [
            '-c',
            `openssl s_client -connect ${new URL(server.listenUrl).host} </dev/null 2>/dev/null | openssl x509 -noout -serial`,
          ],
          { encoding: 'utf8' },
        ).trim();
      expect(served()).toBe(first.serial);
      const second = pair();
      secret.update({ 'tls.crt': second.cert, 'tls.key': second.key });
      await until(
        'the renewed certificate served',
        async () => served(),
        (serial) => serial === second.serial,
        {
          timeoutMs: 15_000,
          intervalMs: 200,
        },
      );
      const renewed = new Agent({ connect: { ca: second.cert } });
      expect(
        (
          await call(
            server.listenUrl,
            'ewk_tls_test_0123456789abcdefghijklm',
            'GET',
            '/ip_policies',
            undefined,
            renewed,
          )
        ).status,
      ).toBe(200);
      await renewed.close();
    } finally {
      secret.remove();
      openssl.cleanup();
    }
  });

  it('replaces the previous admin key when EDGEWARD_ADMIN_API_KEY changes, and refuses short keys', async () => {
    const dataDir = tempDir();
    const oldKey = 'ewk_rotation_old_0123456789abcdefghij';
    const newKey = 'ewk_rotation_new_0123456789abcdefghij';
    const first = await start(['--data-dir', dataDir], { EDGEWARD_ADMIN_API_KEY: oldKey });
    expect((await call(first.listenUrl, oldKey, 'GET', '/ip_policies')).status).toBe(200);
    await first.kill('SIGTERM');
    const second = await start(['--data-dir', dataDir], { EDGEWARD_ADMIN_API_KEY: newKey });
    expect((await call(second.listenUrl, newKey, 'GET', '/ip_policies')).status).toBe(200);
    expect((await call(second.listenUrl, oldKey, 'GET', '/ip_policies')).status).toBe(401);
    await second.kill('SIGTERM');
    await expect(start(['--data-dir', dataDir], { EDGEWARD_ADMIN_API_KEY: 'short' })).rejects.toThrow(
      /EDGEWARD_ADMIN_API_KEY must be at least 32 characters/,
    );
  });

  it('uses --base-url for every uri', async () => {
    const server = await start(['--data-dir', tempDir(), '--base-url', 'https://api.example.test/'], {
      EDGEWARD_ADMIN_API_KEY: 'ewk_base_url_0123456789abcdefghijklm',
    });
    const response = await call(
      server.listenUrl,
      'ewk_base_url_0123456789abcdefghijklm',
      'POST',
      '/ip_policies',
      {},
    );
    const body = (await response.json()) as { id: string; uri: string };
    expect(body.uri).toBe(`https://api.example.test/ip_policies/${body.id}`);
  });

  it('creates the database, its -wal and -shm files and the secret key readable by their owner only', async () => {
    const dataDir = join(tempDir(), 'data');
    const key = 'ewk_file_modes_0123456789abcdefghijkl';
    // Under the usual umask 022, where a file created with the default mode is world-readable.
    const server = await start(['--data-dir', dataDir], { EDGEWARD_ADMIN_API_KEY: key }, [
      'sh',
      '-c',
      'umask 022 && exec "$0" "$@"',
    ]);
    expect((await call(server.listenUrl, key, 'POST', '/ip_policies', {})).status).toBe(201);
    const modes = Object.fromEntries(
      readdirSync(dataDir).map((file) => [file, (statSync(join(dataDir, file)).mode & 0o777).toString(8)]),
    );
    expect(modes).toEqual({
      'edgeward.sqlite': '600',
      'edgeward.sqlite-wal': '600',
      'edgeward.sqlite-shm': '600',
      'secret.key': '600',
    });
    expect((statSync(dataDir).mode & 0o777).toString(8)).toBe('700');
  });

  it('prints the edge key before the first start, making the key file that start then uses', async () => {
    const dataDir = join(tempDir(), 'not-started-yet');
    const noKeys = { EDGEWARD_SECRET_KEY: undefined, EDGEWARD_EDGE_KEY: undefined };
    const printed = spawnCli(['server', '--data-dir', dataDir, '--print-edge-key'], noKeys);
    const [code] = (await once(printed.child, 'exit')) as [number | null];
    expect(code, printed.output()).toBe(0);
    const edgeKey = printed.output().trim();
    expect(edgeKey).toMatch(/^ewedge_[A-Za-z0-9_-]{43}$/);
    expect((statSync(dataDir).mode & 0o777).toString(8)).toBe('700');
    expect((statSync(join(dataDir, 'secret.key')).mode & 0o777).toString(8)).toBe('600');

    const apiKey = 'ewk_print_edge_key_0123456789abcdefgh';
    const server = await start(['--data-dir', dataDir], { ...noKeys, EDGEWARD_ADMIN_API_KEY: apiKey });
    const feed = (bearer: string) =>
      fetch(`${server.listenUrl}${EDGE_FEED_PATH}?edge_id=printed-key-probe&region=us`, {
        headers: { authorization: `Bearer ${bearer}` },
      });
    const accepted = await feed(edgeKey);
    expect(accepted.status).toBe(200);
    await accepted.body?.cancel();
    expect((await feed(`${edgeKey.slice(0, -1)}x`)).status).toBe(401);

    // On PostgreSQL the key must be the replicas' shared one: a file made here would be no replica's.
    const elsewhere = join(tempDir(), 'postgres-replica');
    const refused = spawnCli(
      [
        'server',
        '--data-dir',
        elsewhere,
        '--database-url',
        'postgres://127.0.0.1:1/none',
        '--print-edge-key',
      ],
      noKeys,
    );
    const [refusedCode] = (await once(refused.child, 'exit')) as [number | null];
    expect(refusedCode).toBe(2);
    expect(refused.output()).toContain('--print-edge-key with --database-url needs EDGEWARD_SECRET_KEY');
    expect(existsSync(elsewhere)).toBe(false);
  });

  it('takes --max-json-depth, and refuses a depth it could not honour', async () => {
    const key = 'ewk_max_json_depth_0123456789abcdefgh';
    const server = await start(['--data-dir', tempDir(), '--max-json-depth', '3'], {
      EDGEWARD_ADMIN_API_KEY: key,
    });
    const response = await call(server.listenUrl, key, 'POST', '/ip_policies', { a: { b: { c: {} } } });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { msg: string }).msg).toBe(
      'a.b.c: nests deeper than 3 levels of arrays and objects, the most a request body may have',
    );
    for (const depth of ['0', '1001']) {
      const refused = spawnCli(['server', '--data-dir', tempDir(), '--max-json-depth', depth]);
      const [code] = (await once(refused.child, 'exit')) as [number | null];
      expect(code, depth).toBe(2);
      expect(refused.output()).toContain(`--max-json-depth: '${depth}' is not a whole number from 1 to 1000`);
    }
  });
});
