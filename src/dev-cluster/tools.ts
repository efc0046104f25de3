import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubernetesWrapperGoMod, wrapperKubernetesVersion } from './kubernetes-wrapper.js';
import { withFileLock } from './lock.js';
import { ALL_TOOLS, TOOL_VERSIONS, type ToolName } from './tool-versions.js';

export type ToolPaths = Record<ToolName, string>;
export type Log = (line: string) => void;

const WRAPPERS = fileURLToPath(new URL('../../src/dev-cluster/go-modules/', import.meta.url));
const KUBERNETES_WRAPPER = join(WRAPPERS, 'kubernetes', 'go.mod');

/** Where built binaries live: outside the repo, reused across runs and clones. */
export function toolsCacheDir(): string {
  if (process.env.EDGEWARD_TOOLS_CACHE) return process.env.EDGEWARD_TOOLS_CACHE;
  const base = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(base, 'edgeward', 'tools');
}

interface ToolGroup {
  /** Folder name under the cache, versioned so a bump never reuses an old build. */
  folder: string;
  tools: ToolName[];
  build(outDir: string, log: Log): Promise<void>;
}

const groups: ToolGroup[] = [
  {
    folder: `kubernetes-${TOOL_VERSIONS.kubernetes}`,
    tools: ['kube-apiserver', 'kubectl'],
    build: buildKubernetes,
  },
  {
    folder: `etcd-${TOOL_VERSIONS.etcd}`,
    tools: ['etcd'],
    build: (outDir, log) =>
      buildWrapper('etcd', TOOL_VERSIONS.etcd, outDir, log, `etcd ${TOOL_VERSIONS.etcd}`),
  },
  { folder: `helm-${TOOL_VERSIONS.helm}`, tools: ['helm'], build: buildHelm },
  {
    folder: `argocd-lua-${TOOL_VERSIONS.gopherLua}`,
    tools: ['argocd-lua'],
    build: (outDir, log) =>
      buildWrapper(
        'argocd-lua',
        TOOL_VERSIONS.gopherLua,
        outDir,
        log,
        `argocd-lua (gopher-lua ${TOOL_VERSIONS.gopherLua})`,
      ),
  },
];

function groupOf(tool: ToolName): ToolGroup {
  const group = groups.find((g) => g.tools.includes(tool));
  if (!group) throw new Error(`no build recipe for ${tool}`);
  return group;
}

/**
 * Paths of the requested tools, building what is missing. `EDGEWARD_TOOLS_DIR` points at
 * ready-made binaries instead (a laptop without Go); nothing is built then.
 */
export async function ensureTools(
  only: readonly ToolName[] = ALL_TOOLS,
  log: Log = () => {},
): Promise<ToolPaths> {
  const given = process.env.EDGEWARD_TOOLS_DIR;
  const paths = {} as ToolPaths;
  if (given) {
    for (const tool of only) {
      const path = join(given, tool);
      if (!existsSync(path)) throw new Error(`EDGEWARD_TOOLS_DIR=${given} has no ${tool} binary`);
      paths[tool] = path;
    }
    return paths;
  }
  const cache = toolsCacheDir();
  for (const group of new Set(only.map(groupOf))) {
    const dir = join(cache, group.folder);
    if (!group.tools.every((tool) => existsSync(join(dir, tool)))) {
      requireGo();
      mkdirSync(cache, { recursive: true });
      await withFileLock(join(cache, `${group.folder}.lock`), log, async () => {
        // Another process may have finished the build while this one waited for the lock.
        if (group.tools.every((tool) => existsSync(join(dir, tool)))) return;
        const partial = `${dir}.partial-${process.pid}`;
        rmSync(partial, { recursive: true, force: true });
        mkdirSync(partial, { recursive: true });
        const started = Date.now();
        await group.build(partial, log);
        // The folder appears whole or not at all, so an interrupted build is never mistaken for one.
        rmSync(dir, { recursive: true, force: true });
        renameSync(partial, dir);
        log(`built ${group.tools.join(', ')} in ${Math.round((Date.now() - started) / 1000)} s -> ${dir}`);
      });
    }
    for (const tool of group.tools) paths[tool] = join(dir, tool);
  }
  return paths;
}

function requireGo(): void {
  const probe = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      'Go is not installed, and the Kubernetes test tools are built from Go modules. Either install Go 1.26+, ' +
        'or set EDGEWARD_TOOLS_DIR to a folder holding etcd, kube-apiserver, kubectl and helm binaries, ' +
        'or set KUBECONFIG to use an existing cluster for the tests.',
    );
  }
}

function goEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...extra,
    // -mod=mod: the wrappers carry no go.sum; sums are checked against the checksum database.
    GOFLAGS: '-mod=mod',
    // Build with the Go that is here; never download another toolchain.
    GOTOOLCHAIN: 'local',
    CGO_ENABLED: '0',
  };
}

/** Runs a Go command, printing a heartbeat so a long quiet compile does not look stuck. */
async function go(
  args: string[],
  cwd: string,
  log: Log,
  what: string,
  env: NodeJS.ProcessEnv = {},
): Promise<void> {
  log(`${what}: go ${args.join(' ')}`);
  const started = Date.now();
  const child = spawn('go', args, { cwd, env: goEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const heartbeat = setInterval(() => {
    log(`${what}: still building (${Math.round((Date.now() - started) / 1000)} s)`);
  }, 60_000);
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`${what}: go ${args[0]} failed (exit ${code})\n${output.slice(-4000)}`);
  } finally {
    clearInterval(heartbeat);
  }
}

/** A scratch module folder in the cache holding a copy of a wrapper (go.sum is written there, not in the repo). */
function buildDir(name: string, files: string[]): string {
  const dir = join(toolsCacheDir(), 'src', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const file of files) copyFileSync(join(WRAPPERS, file), join(dir, file.split('/').pop() as string));
  return dir;
}

async function buildKubernetes(outDir: string, log: Log): Promise<void> {
  const wrapperVersion = wrapperKubernetesVersion(readFileSync(KUBERNETES_WRAPPER, 'utf8'));
  if (wrapperVersion !== TOOL_VERSIONS.kubernetes) {
    throw new Error(
      `src/dev-cluster/go-modules/kubernetes/go.mod requires ${wrapperVersion}, not ${TOOL_VERSIONS.kubernetes}: run npm run tools -- --regenerate`,
    );
  }
  const version = TOOL_VERSIONS.kubernetes;
  const [major, minor] = version.slice(1).split('.');
  const stamp = [
    `-X k8s.io/component-base/version.gitVersion=${version}`,
    `-X k8s.io/component-base/version.gitMajor=${major}`,
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    '-X k8s.io/component-base/version.gitTreeState=clean',
    `-X k8s.io/client-go/pkg/version.gitVersion=${version}`,
  ].join(' ');
  const dir = buildDir(`kubernetes-${version}`, ['kubernetes/go.mod']);
  await go(
    [
      'build',
      '-trimpath',
      '-ldflags',
      `-s -w ${stamp}`,
      '-o',
      `${outDir}/`,
      'k8s.io/kubernetes/cmd/kube-apiserver',
      'k8s.io/kubernetes/cmd/kubectl',
    ],
    dir,
    log,
    `kube-apiserver and kubectl ${version} (first build: 10-20 min)`,
  );
}

/** Builds the one binary of a wrapper module in go-modules/ (its go.mod and main.go). */
async function buildWrapper(
  wrapper: string,
  version: string,
  outDir: string,
  log: Log,
  what: string,
): Promise<void> {
  const dir = buildDir(`${wrapper}-${version}`, [`${wrapper}/go.mod`, `${wrapper}/main.go`]);
  await go(['build', '-trimpath', '-ldflags', '-s -w', '-o', join(outDir, wrapper), '.'], dir, log, what);
}

async function buildHelm(outDir: string, log: Log): Promise<void> {
  const pkg = `helm.sh/helm/v3/cmd/helm@${TOOL_VERSIONS.helm}`;
  // Stamped as the release Makefile does, so `helm version` reports the real version.
  const stamp = `-X helm.sh/helm/v3/internal/version.version=${TOOL_VERSIONS.helm}`;
  await go(['install', '-trimpath', '-ldflags', `-s -w ${stamp}`, pkg], toolsCacheDir(), log, pkg, {
    GOBIN: outDir,
  });
}

/** Rewrites src/dev-cluster/go-modules/kubernetes/go.mod from the go.mod of the release in TOOL_VERSIONS. */
export async function regenerateKubernetesWrapper(log: Log): Promise<void> {
  requireGo();
  const version = TOOL_VERSIONS.kubernetes;
  const probe = spawnSync('go', ['mod', 'download', '-json', `k8s.io/kubernetes@${version}`], {
    encoding: 'utf8',
    env: goEnv(),
    cwd: WRAPPERS,
  });
  if (probe.status !== 0)
    throw new Error(`go mod download k8s.io/kubernetes@${version} failed:\n${probe.stderr}`);
  const { GoMod: goModPath } = JSON.parse(probe.stdout) as { GoMod: string };
  writeFileSync(KUBERNETES_WRAPPER, kubernetesWrapperGoMod(version, readFileSync(goModPath, 'utf8')));
  log(`wrote ${KUBERNETES_WRAPPER} for k8s.io/kubernetes ${version}`);
}
