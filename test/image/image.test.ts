import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../src/dev-cluster/free-port.js';
import { buildImage, IMAGE_TAG, NODE_VERSIONS } from '../../src/image/build-image.js';
import { readRuntimeStage } from '../../src/image/dockerfile.js';
import { missingCommands } from '../../src/lib/command-on-path.js';
import { SHARED_IMAGE_DIR } from '../support/node-global-setup.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * The image, built without a Docker engine (debootstrap, Node.js from the npm registry, umoci) and
 * run: unpacked from its OCI layout with umoci and started with chroot as its config says (user,
 * working directory, environment, arguments), it serves the API, answers `operator --help` and runs
 * an edge. And it is the Dockerfile's image: same Node.js major, entrypoint, command, user, ports,
 * volume and exactly the lockfile's production dependencies.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const missing = missingCommands(['debootstrap', 'umoci', 'chroot']);
const isRoot = process.getuid?.() === 0;
const why = !isRoot
  ? 'building and chrooting into an image needs root'
  : `missing ${missing.join(', ')} (the image is built with debootstrap and umoci, run with chroot)`;
const runnable = isRoot && missing.length === 0;
// On CI the tools are installed by .ci/run: there, a missing one is a failure, not a skip.
if (!runnable && process.env.CI) throw new Error(`the image test cannot run on CI: ${why}`);

interface RuntimeConfig {
  process: { args: string[]; cwd: string; env: string[]; user: { uid: number; gid: number } };
}

let scratch: string;
let archive: string;
let rootfs: string;
let config: RuntimeConfig;
const children: ChildProcess[] = [];

/** A process started inside the image as its config says: chroot, its user, cwd and environment. */
function inImage(args: string[], env: Record<string, string> = {}) {
  const { uid, gid } = config.process.user;
  const environment = [...config.process.env, ...Object.entries(env).map(([k, v]) => `${k}=${v}`)];
  return spawn(
    'chroot',
    [
      `--userspec=${uid}:${gid}`,
      rootfs,
      '/usr/bin/env',
      '-i',
      `--chdir=${config.process.cwd}`,
      ...environment,
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

/** What the child has written so far, stdout and stderr together. */
function collected(child: ChildProcess): () => string {
  let text = '';
  const keep = (chunk: Buffer) => {
    text += chunk.toString();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => text;
}

async function output(child: ChildProcess): Promise<{ code: number | null; text: string }> {
  const text = collected(child);
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, text: text() };
}

async function untilOk(url: string, child: ChildProcess, log: () => string): Promise<Response> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`exited ${child.exitCode} before ${url} answered:\n${log()}`);
    try {
      const response = await fetch(url);
      if (response.ok) return response;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`${url} never answered:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describeUnless(runnable ? undefined : why, 'the image, built without Docker', () => {
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'edgeward-image-'));
    // The node suite (second group) runs this very image on a kubelet: built once per run.
    const built = buildImage(process.env[SHARED_IMAGE_DIR] ?? join(scratch, 'out'), (line) =>
      console.log(`[image] ${line}`),
    );
    archive = built.archive;
    const bundle = join(scratch, 'bundle');
    execFileSync('umoci', ['unpack', '--image', `${built.layout}:${IMAGE_TAG}`, bundle], { stdio: 'ignore' });
    rootfs = join(bundle, 'rootfs');
    config = JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8')) as RuntimeConfig;
    execFileSync('mount', ['-t', 'proc', 'proc', join(rootfs, 'proc')]);
  }, 900_000);

  afterAll(async () => {
    for (const child of children) {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    }
    if (rootfs && existsSync(join(rootfs, 'proc/self'))) execFileSync('umount', [join(rootfs, 'proc')]);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('is the Dockerfile’s image: Node.js major, entrypoint, command, user, workdir and environment', async () => {
    const stage = readRuntimeStage(join(ROOT, 'Dockerfile'));
    expect(stage.bases.every((base) => base.startsWith(`node:${stage.nodeMajor}-`))).toBe(true);
    expect(config.process.args).toEqual([...stage.entrypoint, ...stage.cmd]);
    // USER node: uid 1000 in the official node images, and here.
    expect(config.process.user).toMatchObject({ uid: 1000, gid: 1000 });
    expect(readFileSync(join(rootfs, 'etc/passwd'), 'utf8')).toMatch(/^node:x:1000:1000:/m);
    expect(config.process.cwd).toBe(stage.workdir);
    for (const [name, value] of Object.entries(stage.env))
      expect(config.process.env).toContain(`${name}=${value}`);
    const version = await output(inImage(['node', '--version']));
    expect(version.text.trim()).toBe(`v${NODE_VERSIONS[stage.nodeMajor]}`);
  });

  it("is also one OCI archive named edgeward:<version>, the chart's default image", () => {
    const index = JSON.parse(
      execFileSync('tar', ['-xOf', archive, './index.json'], { encoding: 'utf8' }),
    ) as {
      manifests: Array<{ annotations?: Record<string, string> }>;
    };
    expect(index.manifests).toHaveLength(1);
    expect(index.manifests[0]?.annotations).toEqual({
      'org.opencontainers.image.ref.name': IMAGE_TAG,
      'io.containerd.image.name': `docker.io/library/edgeward:${IMAGE_TAG}`,
    });
    // The chart's default image is that name: repository edgeward, the tag its appVersion.
    const values = readFileSync(join(ROOT, 'charts/edgeward/values.yaml'), 'utf8');
    expect(values).toMatch(/\nimage:\n(?: {2}#.*\n)* {2}repository: edgeward\n/);
    expect(readFileSync(join(ROOT, 'charts/edgeward/Chart.yaml'), 'utf8')).toContain(
      `appVersion: "${IMAGE_TAG}"`,
    );
  });

  it('holds exactly the production dependencies the Dockerfile installs (npm ci, then prune --omit=dev)', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/RUN npm ci\n/);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean; os?: string[]; cpu?: string[] }>;
    };
    const fitsHere = (entry: { os?: string[]; cpu?: string[] }) =>
      (!entry.os || entry.os.includes('linux')) && (!entry.cpu || entry.cpu.includes('x64'));
    const production = Object.entries(lock.packages)
      .filter(([path, entry]) => path.startsWith('node_modules/') && !entry.dev && fitsHere(entry))
      .map(([path]) => path)
      .sort();
    const installed = JSON.parse(
      readFileSync(join(rootfs, 'app/node_modules/.package-lock.json'), 'utf8'),
    ) as {
      packages: Record<string, unknown>;
    };
    expect(Object.keys(installed.packages).sort()).toEqual(production);
    expect(
      existsSync(join(rootfs, 'app/node_modules/better-sqlite3/build/Release/better_sqlite3.node')),
    ).toBe(true);
    expect(existsSync(join(rootfs, 'app/node_modules/vitest'))).toBe(false);
    // /app holds what the Dockerfile's final stage copies, nothing else (no sources, no lockfile).
    const stage = readRuntimeStage(join(ROOT, 'Dockerfile'));
    expect(readdirSync(join(rootfs, 'app')).sort()).toEqual([...stage.copied].sort());
  });

  it('starts edgeward server: ready, and a write through the API is stored', async () => {
    const port = await freePort();
    // The image's own entrypoint (node /app/dist/cli.js), with the command on loopback.
    const entrypoint = config.process.args.slice(0, 2);
    const server = inImage([
      ...entrypoint,
      'server',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--data-dir',
      '/data',
    ]);
    children.push(server);
    const log = collected(server);
    await untilOk(`http://127.0.0.1:${port}/readyz`, server, log);
    const key = /ewk_[A-Za-z0-9_-]+/.exec(log())?.[0];
    expect(key).toBeDefined();
    for (let i = 0; i < 50; i++) {
      const created = await fetch(`http://127.0.0.1:${port}/ip_policies`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'svc-version': '2', 'content-type': 'application/json' },
        body: JSON.stringify({ description: `from the image ${i}` }),
      });
      expect(created.status).toBe(201);
    }
    // The SQLite file is the non-root user's, in the volume.
    expect(existsSync(join(rootfs, 'data/edgeward.sqlite'))).toBe(true);

    // An edge from the same image, with the server's edge key.
    const edgeKey = (
      await output(inImage(['node', '/app/dist/cli.js', 'server', '--data-dir', '/data', '--print-edge-key']))
    ).text
      .trim()
      .split('\n')
      .at(-1) as string;
    expect(edgeKey).toMatch(/^ewedge_/);
    const [tunnel, tls, metrics] = [await freePort(), await freePort(), await freePort()];
    const edge = inImage(
      [
        'node',
        '/app/dist/cli.js',
        'edge',
        '--api-url',
        `http://127.0.0.1:${port}`,
        '--data-dir',
        '/data/edge',
        '--tunnel-addr',
        `127.0.0.1:${tunnel}`,
        '--tls-addr',
        `127.0.0.1:${tls}`,
        '--ssh-addr',
        'off',
        '--metrics-addr',
        `127.0.0.1:${metrics}`,
      ],
      { EDGEWARD_EDGE_KEY: edgeKey },
    );
    children.push(edge);
    await untilOk(`http://127.0.0.1:${metrics}/readyz`, edge, collected(edge));
    expect(existsSync(join(rootfs, 'data/edge/tunnel.crt'))).toBe(true);
  });

  it('answers edgeward operator --help', async () => {
    const help = await output(inImage(['node', '/app/dist/cli.js', 'operator', '--help']));
    expect(help.code).toBe(0);
    expect(help.text).toContain('usage: edgeward operator --api-url URL');
  });
});
