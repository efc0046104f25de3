import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { fetch } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { betterSqlitePrebuild } from '../support/better-sqlite-prebuild.js';
import { spawnServer } from '../support/server-process.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * The package as a user installs it: `npm pack` of this checkout, installed into an empty folder,
 * then its `edgeward` binary run for help, a dev cluster (which needs the Go wrapper modules the
 * package ships in src/dev-cluster/go-modules) and a server. Runs after `npm run build` (npm test).
 */
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const built = existsSync(join(ROOT, 'dist/cli.js'));

let work: string;
let cli: string;
beforeAll(async () => {
  if (!built) return;
  work = mkdtempSync(join(tmpdir(), 'edgeward-packed-'));
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
    cwd: ROOT,
  });
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'packed-edgeward-user', private: true }));
  // From npm's cache where it can (the checkout's `npm ci` filled it). better-sqlite3 takes the
  // prebuilt binary a user's install downloads from its release; this machine reaches no release
  // host, so the checkout's own build of the same version is offered where prebuild-install looks
  // for local prebuilds. A different version or Node.js finds none there and compiles, as before.
  await run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--omit=dev', join(work, filename)],
    {
      cwd: work,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 400_000,
      env: { ...process.env, ...(await betterSqlitePrebuild(work)) },
    },
  );
  cli = join(work, 'node_modules/edgeward/dist/cli.js');
}, 420_000);
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const notBuilt = built
  ? undefined
  : 'the checkout is not built: no dist/cli.js (npm run build; npm test builds first)';

describeUnless(notBuilt, 'the packed package (npm pack, installed into an empty folder)', () => {
  it('ships the Go wrapper modules the dev cluster builds its tools from, and no tests', () => {
    const installed = join(work, 'node_modules/edgeward');
    expect(existsSync(join(installed, 'src/dev-cluster/go-modules/kubernetes/go.mod'))).toBe(true);
    expect(existsSync(join(installed, 'src/dev-cluster/go-modules/etcd/go.mod'))).toBe(true);
    expect(existsSync(join(installed, 'test'))).toBe(false);
    expect(readFileSync(join(installed, 'package.json'), 'utf8')).toContain('"edgeward"');
  });

  it('edgeward --help lists the commands, --version names the package version', async () => {
    const { stdout } = await run(process.execPath, [cli, '--help']);
    for (const command of ['server', 'operator', 'backup', 'restore', 'crds', 'dev-cluster', 'tools'])
      expect(stdout).toContain(command);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const printed = await run(process.execPath, [cli, '--version']);
    expect(printed.stdout).toBe(`edgeward ${version} (node ${process.version})\n`);
  });

  it('edgeward dev-cluster up starts a control plane from the installed package, and down stops it', async () => {
    const dir = join(work, 'cluster');
    await run(process.execPath, [cli, 'dev-cluster', 'up', '--dir', dir], { timeout: 120_000 });
    try {
      const kubeconfig = readFileSync(join(dir, 'kubeconfig'), 'utf8');
      const server = /server: (\S+)/.exec(kubeconfig)?.[1];
      expect(server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const { stdout } = await run(process.execPath, [cli, 'dev-cluster', 'env', '--dir', dir]);
      expect(stdout).toContain('KUBECONFIG=');
    } finally {
      await run(process.execPath, [cli, 'dev-cluster', 'down', '--dir', dir], { timeout: 60_000 });
    }
    expect(existsSync(dir)).toBe(false);
  }, 200_000);

  it('edgeward server serves the API from the installed package', async () => {
    const server = await spawnServer(
      ['--data-dir', join(work, 'data')],
      { EDGEWARD_ADMIN_API_KEY: 'ewk_packed_package_test_key_0123456789abcdef' },
      [cli],
    );
    try {
      expect((await fetch(`${server.listenUrl}/healthz`)).status).toBe(200);
      const created = await fetch(`${server.listenUrl}/ip_policies`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer ewk_packed_package_test_key_0123456789abcdef',
          'svc-version': '2',
          'content-type': 'application/json',
        },
      });
      expect(created.status).toBe(201);
      expect((await fetch(`${server.listenUrl}/docs/`)).status).toBe(200);
    } finally {
      await server.kill('SIGTERM');
    }
  });
});
