import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packOciArchive } from '../lib/oci-archive.js';
import { processAlive } from '../lib/process-alive.js';
import { kubernetesWrapperGoMod, wrapperKubernetesVersion } from './kubernetes-wrapper.js';
import { withFileLock } from './lock.js';
import { ALL_TOOLS, TOOL_VERSIONS, type ToolName } from './tool-versions.js';

export type ToolPaths = Record<ToolName, string>;

/** The name containerd knows the pause image by (the node's `sandbox_image`). */
export const PAUSE_IMAGE = `localhost/edgeward/pause:${TOOL_VERSIONS.kubernetes}`;
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
    folder: `kubernetes-node-${TOOL_VERSIONS.kubernetes}`,
    tools: ['kubelet', 'kube-proxy', 'kube-scheduler', 'kube-controller-manager'],
    build: (outDir, log) =>
      buildKubernetesCommands(
        'kubernetes-node',
        ['kubelet', 'kube-proxy', 'kube-scheduler', 'kube-controller-manager'],
        outDir,
        log,
        '(first build: about 8 min)',
      ),
  },
  {
    folder: `containerd-${TOOL_VERSIONS.containerd}`,
    tools: ['containerd', 'containerd-shim-runc-v2', 'ctr'],
    build: buildContainerd,
  },
  { folder: `coredns-${TOOL_VERSIONS.coredns}`, tools: ['coredns'], build: buildCoreDns },
  { folder: `pause-${TOOL_VERSIONS.kubernetes}`, tools: ['pause.oci.tar'], build: buildPauseImage },
  {
    folder: `pebble-${TOOL_VERSIONS.pebble}`,
    tools: ['pebble', 'pebble-challtestsrv', 'pebble-certs'],
    build: buildPebble,
  },
  {
    folder: `cert-manager-${TOOL_VERSIONS.certManager}`,
    tools: ['cert-manager-controller', 'cert-manager-crds'],
    build: buildCertManager,
  },
  {
    folder: `gateway-api-${TOOL_VERSIONS.gatewayApi}`,
    tools: ['gateway-api-crds'],
    build: buildGatewayApi,
  },
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

/** Which of these tools the cache lacks (none when EDGEWARD_TOOLS_DIR provides them). */
export function missingTools(only: readonly ToolName[]): ToolName[] {
  if (process.env.EDGEWARD_TOOLS_DIR) return [];
  const cache = toolsCacheDir();
  return only.filter((tool) => !existsSync(join(cache, groupOf(tool).folder, tool)));
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
        // Half-built folders of builds that were killed (their pid is gone) are of no use.
        for (const entry of readdirSync(cache)) {
          const owner = entry.startsWith(`${group.folder}.partial-`) ? Number(entry.split('-').pop()) : 0;
          if (owner && !processAlive(owner)) rmSync(join(cache, entry), { recursive: true, force: true });
        }
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

/** The release's version stamps, so each binary reports its real version. */
function kubernetesStamp(): string {
  const version = TOOL_VERSIONS.kubernetes;
  const [major, minor] = version.slice(1).split('.');
  return [
    `-X k8s.io/component-base/version.gitVersion=${version}`,
    `-X k8s.io/component-base/version.gitMajor=${major}`,
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    '-X k8s.io/component-base/version.gitTreeState=clean',
    `-X k8s.io/client-go/pkg/version.gitVersion=${version}`,
  ].join(' ');
}

/** Builds commands of k8s.io/kubernetes/cmd from the wrapper module (its replace directives). */
async function buildKubernetesCommands(
  folder: string,
  commands: string[],
  outDir: string,
  log: Log,
  note: string,
): Promise<void> {
  const wrapperVersion = wrapperKubernetesVersion(readFileSync(KUBERNETES_WRAPPER, 'utf8'));
  if (wrapperVersion !== TOOL_VERSIONS.kubernetes) {
    throw new Error(
      `src/dev-cluster/go-modules/kubernetes/go.mod requires ${wrapperVersion}, not ${TOOL_VERSIONS.kubernetes}: run npm run tools -- --regenerate`,
    );
  }
  const version = TOOL_VERSIONS.kubernetes;
  // A scratch folder per group: two groups may build at once (each under its own lock).
  const dir = buildDir(`${folder}-${version}`, ['kubernetes/go.mod']);
  await go(
    [
      'build',
      '-trimpath',
      '-ldflags',
      `-s -w ${kubernetesStamp()}`,
      '-o',
      `${outDir}/`,
      ...commands.map((command) => `k8s.io/kubernetes/cmd/${command}`),
    ],
    dir,
    log,
    `${commands.join(', ')} ${version} ${note}`,
  );
}

function buildKubernetes(outDir: string, log: Log): Promise<void> {
  return buildKubernetesCommands(
    'kubernetes',
    ['kube-apiserver', 'kubectl'],
    outDir,
    log,
    '(first build: 10-20 min)',
  );
}

async function buildContainerd(outDir: string, log: Log): Promise<void> {
  const version = TOOL_VERSIONS.containerd;
  const module = 'github.com/containerd/containerd/v2';
  const stamp = `-X ${module}/version.Version=${version} -X ${module}/version.Package=${module}`;
  await go(
    [
      'install',
      '-trimpath',
      '-ldflags',
      `-s -w ${stamp}`,
      ...['containerd', 'containerd-shim-runc-v2', 'ctr'].map(
        (command) => `${module}/cmd/${command}@${version}`,
      ),
    ],
    toolsCacheDir(),
    log,
    `containerd ${version} (first build: about 5 min)`,
    { GOBIN: outDir },
  );
}

async function buildCoreDns(outDir: string, log: Log): Promise<void> {
  const pkg = `github.com/coredns/coredns@${TOOL_VERSIONS.coredns}`;
  await go(['install', '-trimpath', '-ldflags', '-s -w', pkg], toolsCacheDir(), log, pkg, { GOBIN: outDir });
}

/** Where the Go module cache holds a module's source (downloaded first when it is not there). */
function moduleSource(module: string, version: string): string {
  const probe = spawnSync('go', ['mod', 'download', '-json', `${module}@${version}`], {
    encoding: 'utf8',
    env: goEnv(),
    cwd: toolsCacheDir(),
  });
  if (probe.status !== 0) throw new Error(`go mod download ${module}@${version} failed:\n${probe.stderr}`);
  return (JSON.parse(probe.stdout) as { Dir: string }).Dir;
}

/** Copies files of a module's source into a folder of the build, writable (the module cache's are not). */
function copyFromModule(source: string, files: string[], into: string): void {
  for (const file of files) {
    const target = join(into, file);
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(join(source, file), target);
    chmodSync(target, 0o644);
  }
}

/**
 * Pebble and pebble-challtestsrv, and in `pebble-certs/` the module's test certificates: the
 * minica root (`pebble.minica.pem`) and the `localhost` pair it issued (`localhost/cert.pem`,
 * `localhost/key.pem`), which Pebble serves its ACME and management APIs with.
 */
async function buildPebble(outDir: string, log: Log): Promise<void> {
  const version = TOOL_VERSIONS.pebble;
  const module = 'github.com/letsencrypt/pebble/v2';
  await go(
    [
      'install',
      '-trimpath',
      '-ldflags',
      `-s -w -X main.version=${version}`,
      ...['pebble', 'pebble-challtestsrv'].map((command) => `${module}/cmd/${command}@${version}`),
    ],
    toolsCacheDir(),
    log,
    `pebble ${version}`,
    { GOBIN: outDir },
  );
  copyFromModule(
    join(moduleSource(module, version), 'test', 'certs'),
    ['pebble.minica.pem', 'localhost/cert.pem', 'localhost/key.pem'],
    join(outDir, 'pebble-certs'),
  );
}

/**
 * cert-manager's controller through the wrapper module go-modules/cert-manager-controller, and in
 * `cert-manager-crds/` the release's CRDs (the module's `deploy/crds`, whose specs are the chart's).
 */
async function buildCertManager(outDir: string, log: Log): Promise<void> {
  const version = TOOL_VERSIONS.certManager;
  const module = 'github.com/cert-manager/cert-manager';
  const goMod = readFileSync(join(WRAPPERS, 'cert-manager-controller', 'go.mod'), 'utf8');
  if (!goMod.includes(`require ${module} ${version}\n`)) {
    throw new Error(
      `src/dev-cluster/go-modules/cert-manager-controller/go.mod must require ${module} ${version}`,
    );
  }
  await buildWrapper(
    'cert-manager-controller',
    version,
    outDir,
    log,
    `cert-manager-controller ${version}`,
    `-X ${module}/pkg/util.AppVersion=${version}`,
  );
  const source = moduleSource(module, version);
  const crds = readdirSync(join(source, 'deploy', 'crds')).filter((file) => file.endsWith('.yaml'));
  copyFromModule(join(source, 'deploy', 'crds'), crds, join(outDir, 'cert-manager-crds'));
}

/**
 * The Gateway API CRDs of sigs.k8s.io/gateway-api: `gateway-api-crds/standard/` and
 * `gateway-api-crds/experimental/`, the YAML files of the module's `config/crd/<channel>` (no
 * kustomization.yaml). Nothing to compile.
 */
async function buildGatewayApi(outDir: string, log: Log): Promise<void> {
  const version = TOOL_VERSIONS.gatewayApi;
  log(`gateway-api-crds ${version}: go mod download sigs.k8s.io/gateway-api`);
  const source = moduleSource('sigs.k8s.io/gateway-api', version);
  for (const channel of ['standard', 'experimental']) {
    const from = join(source, 'config', 'crd', channel);
    const files = readdirSync(from).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml');
    copyFromModule(from, files, join(outDir, 'gateway-api-crds', channel));
  }
}

/**
 * The pod sandbox image: `build/pause/linux/pause.c` of the Kubernetes release, compiled static
 * (gcc) and packed as a one-file OCI archive named for containerd.
 */
async function buildPauseImage(outDir: string, log: Log): Promise<void> {
  const version = TOOL_VERSIONS.kubernetes;
  const source = moduleSource('k8s.io/kubernetes', version);
  const rootfs = join(outDir, 'rootfs');
  mkdirSync(rootfs, { recursive: true });
  log(`pause ${version}: gcc -static build/pause/linux/pause.c`);
  const gcc = spawnSync(
    'gcc',
    [
      '-Os',
      '-static',
      '-Wall',
      `-DVERSION=${version}`,
      '-o',
      join(rootfs, 'pause'),
      join(source, 'build/pause/linux/pause.c'),
    ],
    { encoding: 'utf8' },
  );
  if (gcc.error || gcc.status !== 0)
    throw new Error(
      `compiling the pause image needs gcc and libc's static library (build-essential):\n${gcc.stderr ?? gcc.error}`,
    );
  packOciArchive({
    rootfs,
    archive: join(outDir, 'pause.oci.tar'),
    name: PAUSE_IMAGE,
    config: { entrypoint: ['/pause'], user: '65535:65535' },
  });
  rmSync(rootfs, { recursive: true, force: true });
}

/** Builds the one binary of a wrapper module in go-modules/ (its go.mod and main.go). */
async function buildWrapper(
  wrapper: string,
  version: string,
  outDir: string,
  log: Log,
  what: string,
  stamp = '',
): Promise<void> {
  const dir = buildDir(`${wrapper}-${version}`, [`${wrapper}/go.mod`, `${wrapper}/main.go`]);
  const ldflags = `-s -w ${stamp}`.trim();
  await go(['build', '-trimpath', '-ldflags', ldflags, '-o', join(outDir, wrapper), '.'], dir, log, what);
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
