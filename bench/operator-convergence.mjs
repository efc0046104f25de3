// Operator convergence benchmark.
//
// Run: `npm run bench:operator` or `node --import tsx bench/operator-convergence.mjs [N,...]`.
// It runs on the TypeScript sources through tsx (no build needed; dist/ has no operator), imports
// the dev control plane code directly, and spawns `src/cli.ts server` and `src/cli.ts operator`
// as separate processes, exactly as test/kubernetes/operator.test.ts does.
//
// For each N (argv[2] or BENCH_N, comma-separated, default 200) in a fresh namespace:
//   N/10 IPPolicies (2 rules each) + N TLSEdges, each referencing one policy, in one `kubectl apply`;
//   time until every TLSEdge is Ready=True for its current generation (list polled every second);
//   edgeward API calls per resource (operator /metrics, api="edgeward", / (N + N/10));
//   steady-state edgeward API calls per minute (BENCH_STEADY_SECONDS, default 60);
//   operator RSS (VmRSS and peak VmHWM from /proc/<pid>/status).
// Everything is loopback-only; every process and temp dir is removed in `finally`.

import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { controlPlaneDown, controlPlaneUp } from '../src/dev-cluster/control-plane.ts';
import { freePort } from '../src/dev-cluster/free-port.ts';
import { ensureTools } from '../src/dev-cluster/tools.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const CRDS_DIR = fileURLToPath(new URL('../crds/', import.meta.url));
const GROUP_VERSION = 'edgeward.dev/v1alpha1';
const PER_N_TIMEOUT_MS = 15 * 60_000;
const STEADY_SECONDS = Number(process.env.BENCH_STEADY_SECONDS ?? 60);
const sizes = String(process.argv[2] ?? process.env.BENCH_N ?? '200')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
if (sizes.length === 0) throw new Error('BENCH_N: expected positive integers like 200 or 200,1000');

const children = new Set();
const log = (line) => process.stderr.write(`[bench] ${line}\n`);

/** Spawns a tsx child; keeps the last 20 kB of its output for error messages. */
function startChild(name, args, env) {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
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

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function waitUntil(what, timeoutMs, probe, proc) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc && proc.child.exitCode !== null) {
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

function metricSum(text, name, label) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(label))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

async function apiCalls(metricsUrl) {
  const response = await fetch(metricsUrl);
  if (!response.ok) throw new Error(`GET ${metricsUrl}: ${response.status}`);
  const text = await response.text();
  const byLabels = {};
  for (const line of text.split('\n')) {
    if (line.startsWith('edgeward_operator_api_requests_total{')) {
      byLabels[line.slice(line.indexOf('{'), line.lastIndexOf(' '))] = Number(
        line.slice(line.lastIndexOf(' ') + 1),
      );
    }
  }
  return {
    byLabels,
    edgeward: metricSum(text, 'edgeward_operator_api_requests_total', 'api="edgeward"'),
    kubernetes: metricSum(text, 'edgeward_operator_api_requests_total', 'api="kubernetes"'),
  };
}

function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 };
}

function manifests(namespace, n) {
  const policies = Math.max(1, Math.floor(n / 10));
  const items = [];
  for (let p = 0; p < policies; p++) {
    items.push({
      apiVersion: GROUP_VERSION,
      kind: 'IPPolicy',
      metadata: { name: `policy-${p}`, namespace },
      spec: {
        description: `bench policy ${p}`,
        rules: [
          { cidr: `10.${p % 256}.0.0/16`, action: 'allow' },
          { cidr: `192.0.2.${p % 256}/32`, action: 'deny' },
        ],
      },
    });
  }
  for (let e = 0; e < n; e++) {
    items.push({
      apiVersion: GROUP_VERSION,
      kind: 'TLSEdge',
      metadata: { name: `edge-${e}`, namespace },
      spec: {
        description: `bench edge ${e}`,
        hostports: [`e${e}.bench.example.com:443`],
        tlsTermination: { terminateAt: 'upstream' },
        backend: { labels: { app: `edge-${e}` } },
        ipRestriction: { ipPolicyRefs: [{ name: `policy-${e % policies}` }] },
      },
    });
  }
  // One multi-document YAML (JSON is valid YAML), applied in one kubectl call.
  return { policies, yaml: items.map((item) => `---\n${JSON.stringify(item)}\n`).join('') };
}

async function main() {
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'edgeward-bench-operator-'));
  const clusterDir = join(work, 'cluster');
  let clusterUp = false;
  const results = [];
  try {
    const { kubectl: kubectlPath } = await ensureTools(['kubectl'], log);
    const cluster = await controlPlaneUp(clusterDir, log);
    clusterUp = true;
    const kubectl = async (args, input) => {
      const child = run(kubectlPath, args, {
        env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath },
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
    await kubectl(['apply', '-f', CRDS_DIR]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', CRDS_DIR]);

    for (const n of sizes) {
      const adminKey = randomBytes(32).toString('hex');
      const server = startChild(
        'edgeward server',
        ['server', '--port', '0', '--data-dir', join(work, `server-${n}`), '--rate-limit', '0'],
        { EDGEWARD_ADMIN_API_KEY: adminKey, LOG_LEVEL: 'info' },
      );
      let operator;
      try {
        const apiUrl = await waitUntil(
          'server listen address',
          30_000,
          async () => /"listen":"([^"]+)"/.exec(server.output())?.[1],
          server,
        );
        const namespace = `bench-${n}-${randomBytes(3).toString('hex')}`;
        await kubectl(['create', 'namespace', namespace]);
        const [metricsPort, probePort] = [await freePort(), await freePort()];
        operator = startChild(
          'edgeward operator',
          [
            'operator',
            '--api-url',
            apiUrl,
            '--watch-namespaces',
            namespace,
            '--metrics-addr',
            `127.0.0.1:${metricsPort}`,
            '--probe-addr',
            `127.0.0.1:${probePort}`,
          ],
          { KUBECONFIG: cluster.kubeconfigPath, EDGEWARD_API_KEY: adminKey },
        );
        const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
        await waitUntil(
          'operator /readyz',
          60_000,
          async () => {
            const response = await fetch(`http://127.0.0.1:${probePort}/readyz`);
            return response.ok;
          },
          operator,
        );
        const before = await apiCalls(metricsUrl);

        const { policies, yaml } = manifests(namespace, n);
        log(`N=${n}: applying ${policies} IPPolicies + ${n} TLSEdges in ${namespace}`);
        const t0 = performance.now();
        await kubectl(['apply', '-f', '-'], yaml);
        const applySeconds = (performance.now() - t0) / 1000;
        let readyCount = 0;
        let lastLog = 0;
        const deadline = Date.now() + PER_N_TIMEOUT_MS;
        for (;;) {
          if (operator.child.exitCode !== null) throw new Error(`operator exited:\n${operator.output()}`);
          const list = JSON.parse(
            await kubectl(['get', '-n', namespace, 'tlsedges.edgeward.dev', '-o', 'json']),
          );
          readyCount = list.items.filter((cr) => {
            const ready = cr.status?.conditions?.find((c) => c.type === 'Ready');
            return ready?.status === 'True' && ready.observedGeneration === cr.metadata.generation;
          }).length;
          if (readyCount === n) break;
          if (Date.now() > deadline) {
            throw new Error(
              `N=${n}: only ${readyCount}/${n} TLSEdges Ready after 15 min:\n${operator.output().slice(-4000)}`,
            );
          }
          if (Date.now() - lastLog > 10_000) {
            log(`N=${n}: ${readyCount}/${n} Ready after ${((performance.now() - t0) / 1000).toFixed(0)} s`);
            lastLog = Date.now();
          }
          await sleep(1000);
        }
        const convergeSeconds = (performance.now() - t0) / 1000;
        const converged = await apiCalls(metricsUrl);
        const memoryAtConvergence = memoryOf(operator.child.pid);

        log(
          `N=${n}: converged in ${convergeSeconds.toFixed(1)} s; sampling steady state for ${STEADY_SECONDS} s`,
        );
        const steadyStart = await apiCalls(metricsUrl);
        const s0 = performance.now();
        // Sampled in slices too, so a draining tail can be told from a loop that never stops.
        for (let slice = 0, last = steadyStart.edgeward; slice < Math.ceil(STEADY_SECONDS / 20); slice++) {
          await sleep(Math.min(20, STEADY_SECONDS - slice * 20) * 1000);
          const now = (await apiCalls(metricsUrl)).edgeward;
          log(`N=${n}: steady +${(slice + 1) * 20} s: ${now - last} edgeward calls in this slice`);
          last = now;
        }
        const steadyEnd = await apiCalls(metricsUrl);
        const steadyMinutes = (performance.now() - s0) / 60_000;
        const memoryAfter = memoryOf(operator.child.pid);

        // Which calls continue when nothing changes: the label sets whose counters moved.
        const steadyBreakdown = Object.entries(steadyEnd.byLabels)
          .map(([labels, value]) => [labels, value - (steadyStart.byLabels[labels] ?? 0)])
          .filter(([, delta]) => delta > 0)
          .map(([labels, delta]) => `${labels} +${delta}`);
        const edgewardCalls = converged.edgeward - before.edgeward;
        results.push({
          n,
          policies,
          applySeconds,
          convergeSeconds,
          edgewardCalls,
          perResource: edgewardCalls / (n + policies),
          kubernetesCalls: converged.kubernetes - before.kubernetes,
          steadyEdgewardPerMin: (steadyEnd.edgeward - steadyStart.edgeward) / steadyMinutes,
          steadyKubernetesPerMin: (steadyEnd.kubernetes - steadyStart.kubernetes) / steadyMinutes,
          rssAtConvergence: memoryAtConvergence.rssMiB,
          rssAfterSteady: memoryAfter.rssMiB,
          peakRss: memoryAfter.peakMiB,
          steadyBreakdown,
        });
        printTable(results.at(-1));
      } finally {
        if (operator) await stopChild(operator.child);
        await stopChild(server.child);
      }
    }
  } finally {
    for (const child of children) await stopChild(child);
    if (clusterUp) await controlPlaneDown(clusterDir).catch((error) => log(`control plane down: ${error}`));
    rmSync(work, { recursive: true, force: true });
    log(`total wall time ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
}

function printTable(r) {
  const rows = [
    ['TLSEdges (N)', r.n],
    ['IPPolicies (N/10, 2 rules each)', r.policies],
    ['kubectl apply (s)', r.applySeconds.toFixed(1)],
    ['time to all Ready=True (s)', r.convergeSeconds.toFixed(1)],
    ['edgeward API calls to converge', r.edgewardCalls],
    ['edgeward API calls per resource', r.perResource.toFixed(2)],
    ['Kubernetes API calls to converge', r.kubernetesCalls],
    [`steady edgeward calls/min (${STEADY_SECONDS} s)`, r.steadyEdgewardPerMin.toFixed(1)],
    [`steady Kubernetes calls/min (${STEADY_SECONDS} s)`, r.steadyKubernetesPerMin.toFixed(1)],
    ['operator RSS at convergence (MiB)', r.rssAtConvergence.toFixed(1)],
    ['operator RSS after steady (MiB)', r.rssAfterSteady.toFixed(1)],
    ['operator peak RSS VmHWM (MiB)', r.peakRss.toFixed(1)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  process.stdout.write(`\nedgeward operator convergence, N=${r.n}\n`);
  for (const [k, v] of rows) process.stdout.write(`  ${k.padEnd(width)}  ${v}\n`);
  process.stdout.write('  steady-state calls by label set:\n');
  for (const line of r.steadyBreakdown) process.stdout.write(`    ${line}\n`);
}

// Ctrl-C still cleans up: turn signals into an exception path through the finally blocks.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const child of children) child.kill('SIGKILL');
    process.exitCode = 130;
  });
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
});
