/**
 * Helpers the operator benchmarks share (operator-convergence.mjs, crash-trials.mjs): tsx children
 * of `src/cli.ts`, a throwaway control plane with the CRDs applied, kubectl, Ready counts. They
 * import TypeScript sources, so the benches run under `node --import tsx`.
 */
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { controlPlaneUp } from '../../src/dev-cluster/control-plane.ts';
import { ensureTools } from '../../src/dev-cluster/tools.ts';
import {
  FINALIZER_POLICY_NAME,
  finalizerPolicy,
  finalizerPolicyBinding,
} from '../../src/operator/admission/finalizer-policy.ts';
import { OPERATOR_KINDS } from '../../src/operator/kinds.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const BUILT_CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const CRDS_DIR = fileURLToPath(new URL('../../crds/', import.meta.url));
export const GROUP_VERSION = 'edgeward.dev/v1alpha1';

/** Every child started here, so a bench's `finally` (or a signal) can stop what is left. */
export const children = new Set();

/** Spawns a tsx child (or the built CLI); keeps the last 20 kB of its output for error messages. */
export function startChild(name, args, env, built = false, nodeArgs = []) {
  const script = built ? [BUILT_CLI] : ['--import', 'tsx', CLI];
  const child = spawn(process.execPath, [...nodeArgs, ...script, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  children.add(child);
  child.once('exit', () => children.delete(child));
  return { name, child, output: () => output };
}

export const exited = (child) => child.exitCode !== null || child.signalCode !== null;

export async function stopChild(child) {
  if (exited(child)) return;
  const gone = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await gone;
  clearTimeout(timer);
}

/** Ctrl-C still cleans up: signals become an exception path through the benches' finally blocks. */
export function killChildrenOnSignal() {
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      for (const child of children) child.kill('SIGKILL');
      process.exitCode = 130;
    });
  }
}

/** Polls `probe` until it gives a value other than undefined/false; fails early if `proc` exits. */
export async function waitUntil(what, timeoutMs, probe, proc) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc && exited(proc.child)) {
      throw new Error(`${proc.name} exited while waiting for ${what}:\n${proc.output()}`);
    }
    const value = await probe().catch(() => undefined);
    if (value !== undefined && value !== false) return value;
    await sleep(250);
  }
  throw new Error(
    `timed out after ${timeoutMs / 1000} s waiting for ${what}${proc ? `:\n${proc.output()}` : ''}`,
  );
}

/** `edgeward server` on a free loopback port with `adminKey`; resolves once it prints its address. */
export async function startServer(args, env) {
  const server = startChild('edgeward server', ['server', '--port', '0', ...args], {
    LOG_LEVEL: 'info',
    ...env,
  });
  const apiUrl = await waitUntil(
    'server listen address',
    // tsx compiles the server on start: slow on a loaded machine.
    180_000,
    async () => /"listen":"([^"]+)"/.exec(server.output())?.[1],
    server,
  );
  return { ...server, apiUrl };
}

/** Resolves once the operator's /readyz (on `probePort`) answers 200. */
export function operatorReady(operator, probePort) {
  return waitUntil(
    'operator /readyz',
    180_000,
    async () => (await fetch(`http://127.0.0.1:${probePort}/readyz`)).ok,
    operator,
  );
}

/** kubectl against `kubeconfigPath`; `input` goes to its stdin; a failure says which call. */
export function kubectlFor(kubectlPath, kubeconfigPath) {
  return async (args, input) => {
    const child = run(kubectlPath, args, {
      env: { ...process.env, KUBECONFIG: kubeconfigPath },
      maxBuffer: 256 * 1024 * 1024,
    });
    if (input !== undefined) child.child.stdin.end(input);
    try {
      return (await child).stdout;
    } catch (error) {
      throw new Error(`kubectl ${args.join(' ')} failed: ${error.stderr ?? error.message}`, {
        cause: error,
      });
    }
  };
}

/**
 * etcd + kube-apiserver in `dir` (stop them with controlPlaneDown(dir)), the edgeward CRDs applied
 * and Established; resolves with the control plane and its kubectl.
 */
export async function clusterWithCrds(dir, log) {
  const { kubectl: kubectlPath } = await ensureTools(['kubectl'], log);
  const cluster = await controlPlaneUp(dir, log);
  const kubectl = kubectlFor(kubectlPath, cluster.kubeconfigPath);
  await kubectl(['apply', '-f', CRDS_DIR]);
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', CRDS_DIR]);
  return { cluster, kubectl, kubectlPath, pkiDir: join(dir, 'pki') };
}

/**
 * BENCH_FINALIZER_POLICY=1: the operator benches bind the finalizer admission policy (the chart's
 * default on Kubernetes 1.36+) to their namespaces, so the finalizer is on from the create, as users
 * run it; without it the operator adds the finalizer itself, as on older clusters.
 */
export const FINALIZER_POLICY = process.env.BENCH_FINALIZER_POLICY === '1';

/**
 * The finalizer admission policy (config/admission, the chart's default on Kubernetes 1.36+) bound
 * to `namespaces` alone (one binding per bench: a later call moves it), in effect before this
 * returns: a dry-run create shows the finalizer.
 */
export async function bindFinalizerPolicy(kubectl, namespaces) {
  const name = `${FINALIZER_POLICY_NAME}-bench`;
  const items = [finalizerPolicy(OPERATOR_KINDS, name), finalizerPolicyBinding(name, namespaces)];
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  const probe = JSON.stringify({
    apiVersion: GROUP_VERSION,
    kind: 'IPPolicy',
    metadata: { name: 'probe', namespace: namespaces[0] },
    spec: { description: 'dry run' },
  });
  for (let attempt = 0; ; attempt++) {
    const admitted = JSON.parse(
      await kubectl(['create', '--dry-run=server', '-o', 'json', '-f', '-'], probe),
    );
    if (admitted.metadata.finalizers?.length) return;
    if (attempt === 100) throw new Error('the finalizer policy never took effect');
    await sleep(100);
  }
}

const readyForItsGeneration = (object) =>
  object.status?.conditions?.some(
    (c) => c.type === 'Ready' && c.status === 'True' && c.observedGeneration === object.metadata.generation,
  ) ?? false;

/**
 * How many CRs of a kind are Ready=True for their current generation, kept up to date by a watch
 * (`kubectl get --raw …?watch=true`: one JSON event per line). Listing every CR once a second
 * instead cost the bench 13 s of CPU in a 41 s run of 1,000 edges, on the two cores the operator
 * and the API server converge on, and the API server as much again to serve the lists.
 * `stop()` waits for kubectl to exit, so its CPU counts among the reaped children's.
 */
export function watchReady(kubectlPath, kubeconfigPath, namespace, plural) {
  const resource = plural.slice(0, plural.indexOf('.'));
  const ready = new Map();
  let resourceVersion;
  let stopped = false;
  let failure;
  let child;
  const start = () => {
    const since = resourceVersion === undefined ? '' : `&resourceVersion=${resourceVersion}`;
    const path = `/apis/${GROUP_VERSION}/namespaces/${namespace}/${resource}?watch=true${since}`;
    child = spawn(kubectlPath, ['get', '--raw', path], {
      env: { ...process.env, KUBECONFIG: kubeconfigPath },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let partial = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop();
      for (const line of lines) {
        if (!line) continue;
        try {
          onEvent(JSON.parse(line));
        } catch (error) {
          failure ??= new Error(`watch of ${plural}: cannot read ${line.slice(0, 200)}`, { cause: error });
        }
      }
    });
    child.stderr.on('data', (chunk) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-4000);
    });
    // 'close', not 'exit': by then every event kubectl wrote has been read.
    child.once('close', (code) => {
      children.delete(child);
      if (stopped || failure) return;
      if (code === 0) {
        // The API server ends every watch after a while; go on from the last version seen.
        start();
      } else if (/\b410\b|Expired|too old resource version/.test(stderr)) {
        forgetVersion();
        start();
      } else {
        failure = new Error(`kubectl get --raw ${path} exited with ${code}: ${stderr}`);
      }
    });
  };
  // The version seen is too old to resume from: the next start lists every object again.
  const forgetVersion = () => {
    resourceVersion = undefined;
    ready.clear();
  };
  const onEvent = ({ type, object }) => {
    if (type === 'ERROR') {
      // 410 Gone: the server ends this watch next; its 'close' then resumes from no version.
      if (object.code === 410) {
        forgetVersion();
        return;
      }
      failure = new Error(`watch of ${plural}: ${object.message}`);
      return;
    }
    resourceVersion = object.metadata.resourceVersion;
    if (type === 'DELETED') ready.delete(object.metadata.name);
    else if (type === 'ADDED' || type === 'MODIFIED')
      ready.set(object.metadata.name, readyForItsGeneration(object));
  };
  start();
  return {
    count() {
      if (failure) throw failure;
      let n = 0;
      for (const value of ready.values()) if (value) n++;
      return n;
    },
    async stop() {
      stopped = true;
      await stopChild(child);
    },
  };
}

/** How many CRs of a kind are Ready=True for their current generation (one list). */
export async function readyOf(kubectl, namespace, plural) {
  const template =
    '{range .items[*]}{.metadata.generation} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].observedGeneration}{"\\n"}{end}';
  const text = await kubectl(['get', '-n', namespace, plural, '-o', `jsonpath=${template}`]);
  return text
    .split('\n')
    .map((line) => line.split(' '))
    .filter(([generation, status, observed]) => status === 'True' && observed === generation).length;
}
