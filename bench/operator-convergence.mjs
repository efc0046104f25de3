// Operator convergence benchmark.
//
// Run: `npm run bench:operator` or `node --import tsx bench/operator-convergence.mjs [N,...]`.
// It runs on the TypeScript sources through tsx (no build needed; dist/ has no operator), imports
// the dev control plane code directly, and spawns `src/cli.ts server` and `src/cli.ts operator`
// as separate processes, exactly as test/kubernetes/operator.test.ts does.
//
// For each N (argv[2] or BENCH_N, comma-separated, default 200) in a fresh namespace:
//   N CRs of the kinds in BENCH_KINDS (default `tlsedge,ippolicy`), split evenly (or by weights:
//   `tlsedge:10,ippolicy:1` makes 10 edges per policy), in one
//   `kubectl apply`: tlsedge (each names an IPPolicy of the mix, if there is one), ippolicy
//   (2 rules), tunnelcredential (the operator writes its token to a Secret it owns),
//   tlscertificate (its private key in a Secret the spec names, written with it); plus
//   BENCH_UNRELATED_SECRETS (default 0) Secrets nothing names, which the operator must not hold;
//   time until every CR is Ready=True for its current generation (a watch per kind);
//   edgeward API calls per CR (operator /metrics, api="edgeward");
//   steady-state edgeward API calls per minute (BENCH_STEADY_SECONDS, default 60, in 20 s slices);
//   operator RSS (VmRSS and peak VmHWM from /proc/<pid>/status) and V8 heap used (/metrics).
// BENCH_EDGE_BACKEND: `labels` (default: each edge's own tunnel-group backend, which the operator
// creates and keeps: two server objects per edge) or `id` (every edge names one backend made
// before the apply: one server object per edge).
// BENCH_OPERATOR_ARGS adds operator flags (e.g. `--api-qps 100 --resync-period 2m`).
// BENCH_OPERATOR_FROM=dist runs the operator as the image does, `node dist/cli.js` (run `npm run
// build` first): tsx compiles in the process and adds about 200 MiB of RSS the image does not have.
// Everything is loopback-only; every process and temp dir is removed in `finally`.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { controlPlaneDown } from '../src/dev-cluster/control-plane.ts';
import { freePort } from '../src/dev-cluster/free-port.ts';
import {
  bindFinalizerPolicy,
  children,
  clusterWithCrds,
  FINALIZER_POLICY,
  GROUP_VERSION,
  killChildrenOnSignal,
  operatorReady,
  startChild,
  startServer,
  stopChild,
  watchReady,
} from './tools/operator-kit.mjs';

const run = promisify(execFile);
const OPERATOR_FROM = process.env.BENCH_OPERATOR_FROM ?? 'src';
if (!['src', 'dist'].includes(OPERATOR_FROM)) throw new Error('BENCH_OPERATOR_FROM: src or dist');
// The watches keep the counts in memory: checking them often costs nothing.
const READY_CHECK_MS = 100;
const PER_N_TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MINUTES ?? 15) * 60_000;
const STEADY_SECONDS = Number(process.env.BENCH_STEADY_SECONDS ?? 60);
const UNRELATED_SECRETS = Number(process.env.BENCH_UNRELATED_SECRETS ?? 0);
// `--server-side` applies each object with one PATCH (as Argo CD's ServerSideApply=true does)
// instead of kubectl's read, then create.
const APPLY_ARGS = (process.env.BENCH_APPLY_ARGS ?? '').split(/\s+/).filter((arg) => arg !== '');
// BENCH_APPLY_FIRST=1: apply everything before the operator starts, then time the operator alone
// from its start to all Ready (its catch-up throughput, without kubectl sharing the apiserver).
const APPLY_FIRST = process.env.BENCH_APPLY_FIRST === '1';
// BENCH_OPERATOR_NODE_ARGS: node flags for the operator (`--cpu-prof --cpu-prof-dir=/tmp/prof`).
const OPERATOR_NODE_ARGS = (process.env.BENCH_OPERATOR_NODE_ARGS ?? '')
  .split(/\s+/)
  .filter((arg) => arg !== '');
const EDGE_BACKEND = process.env.BENCH_EDGE_BACKEND ?? 'labels';
if (!['labels', 'id'].includes(EDGE_BACKEND)) throw new Error('BENCH_EDGE_BACKEND: labels or id');
const OPERATOR_ARGS = (process.env.BENCH_OPERATOR_ARGS ?? '').split(/\s+/).filter((arg) => arg !== '');
/** Kinds the bench can make, by lower-case name: the plural to list and one object's manifest. */
const KINDS = {
  tlsedge: { kind: 'TLSEdge', plural: 'tlsedges.edgeward.dev' },
  ippolicy: { kind: 'IPPolicy', plural: 'ippolicies.edgeward.dev' },
  tunnelcredential: { kind: 'TunnelCredential', plural: 'tunnelcredentials.edgeward.dev' },
  tlscertificate: { kind: 'TLSCertificate', plural: 'tlscertificates.edgeward.dev' },
};
/** Kind -> weight in the mix (`kind` alone weighs 1). */
const weights = new Map(
  String(process.env.BENCH_KINDS ?? 'tlsedge,ippolicy')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '')
    .map((s) => {
      const [kind, weight = '1'] = s.split(':');
      if (!(kind in KINDS))
        throw new Error(`BENCH_KINDS: ${kind} is not one of ${Object.keys(KINDS).join(', ')}`);
      if (!(Number(weight) > 0)) throw new Error(`BENCH_KINDS: ${s}: the weight must be a positive number`);
      return [kind, Number(weight)];
    }),
);
const kinds = [...weights.keys()];
const sizes = String(process.argv[2] ?? process.env.BENCH_N ?? '200')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
if (sizes.length === 0) throw new Error('BENCH_N: expected positive integers like 200 or 200,1000');

const log = (line) => process.stderr.write(`[bench] ${line}\n`);

function metricSum(text, name, label) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(label))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

async function metricsText(metricsUrl) {
  const response = await fetch(metricsUrl);
  if (!response.ok) throw new Error(`GET ${metricsUrl}: ${response.status}`);
  return response.text();
}

/** V8 heap used (MiB), from prom-client's process metrics. */
async function heapUsedMiB(metricsUrl) {
  const line = (await metricsText(metricsUrl))
    .split('\n')
    .find((l) => l.startsWith('nodejs_heap_size_used_bytes '));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) / 2 ** 20 : Number.NaN;
}

async function apiCalls(metricsUrl) {
  const text = await metricsText(metricsUrl);
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

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
function cpuSecondsOf(pid, { reapedChildren = false } = {}) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), counted from field 3 (state).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticksPerSecond = 100;
  // utime, stime; or cutime, cstime: the children it has waited for (here: the kubectl runs).
  const [user, system] = reapedChildren ? [fields[13], fields[14]] : [fields[11], fields[12]];
  return (Number(user) + Number(system)) / ticksPerSecond;
}

/** CPU seconds of each named process, to see which one bounds convergence on a small machine. */
function cpuOf(pids) {
  return Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSecondsOf(pid)]));
}

function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 };
}

/** One self-signed P-256 certificate and key, shared by every TLSCertificate of a run. */
async function benchCertificate(dir) {
  const keyPath = join(dir, 'bench-key.pem');
  const certPath = join(dir, 'bench-cert.pem');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    '/CN=bench.example.com',
    '-addext',
    'subjectAltName=DNS:bench.example.com',
    '-days',
    '30',
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ]);
  return { certificatePem: readFileSync(certPath, 'utf8'), keyPem: readFileSync(keyPath, 'utf8') };
}

/** N CRs of the mix, split by weight (the first kinds take the remainder), and their Secrets. */
function manifests(namespace, n, certificate, sharedBackendId) {
  const total = [...weights.values()].reduce((a, b) => a + b, 0);
  const counts = Object.fromEntries(kinds.map((kind) => [kind, Math.floor((n * weights.get(kind)) / total)]));
  for (let i = 0, left = n - Object.values(counts).reduce((a, b) => a + b, 0); left > 0; i++, left--) {
    counts[kinds[i % kinds.length]] += 1;
  }
  const items = [];
  const policies = counts.ippolicy ?? 0;
  for (let p = 0; p < policies; p++) {
    items.push({
      apiVersion: GROUP_VERSION,
      kind: 'IPPolicy',
      metadata: { name: `policy-${p}`, namespace },
      spec: {
        description: `bench policy ${p}`,
        rules: [
          { cidr: `10.${p % 256}.${Math.floor(p / 256) % 256}.0/24`, action: 'allow' },
          { cidr: `192.0.2.${p % 256}/32`, action: 'deny' },
        ],
      },
    });
  }
  for (let e = 0; e < (counts.tlsedge ?? 0); e++) {
    items.push({
      apiVersion: GROUP_VERSION,
      kind: 'TLSEdge',
      metadata: { name: `edge-${e}`, namespace },
      spec: {
        description: `bench edge ${e}`,
        hostports: [`e${e}.bench.example.com:443`],
        tlsTermination: { terminateAt: 'upstream' },
        backend: sharedBackendId ? { backendId: sharedBackendId } : { labels: { app: `edge-${e}` } },
        ...(policies > 0 ? { ipRestriction: { ipPolicyRefs: [{ name: `policy-${e % policies}` }] } } : {}),
      },
    });
  }
  for (let c = 0; c < (counts.tunnelcredential ?? 0); c++) {
    items.push({
      apiVersion: GROUP_VERSION,
      kind: 'TunnelCredential',
      metadata: { name: `cred-${c}`, namespace },
      spec: { description: `bench credential ${c}`, acl: [`bind:c${c}.bench.example.com`] },
    });
  }
  for (let c = 0; c < (counts.tlscertificate ?? 0); c++) {
    items.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `cert-${c}-key`, namespace },
      type: 'Opaque',
      stringData: { 'tls.key': certificate.keyPem },
    });
    items.push({
      apiVersion: GROUP_VERSION,
      kind: 'TLSCertificate',
      metadata: { name: `cert-${c}`, namespace },
      spec: {
        description: `bench certificate ${c}`,
        certificatePem: certificate.certificatePem,
        privateKeySecretRef: { name: `cert-${c}-key`, key: 'tls.key' },
      },
    });
  }
  for (let u = 0; u < UNRELATED_SECRETS; u++) {
    // About the size of a typical application Secret: nothing names it.
    items.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `unrelated-${u}`, namespace, labels: { app: 'unrelated' } },
      type: 'Opaque',
      stringData: { password: randomBytes(24).toString('hex'), config: 'x'.repeat(1024) },
    });
  }
  // One multi-document YAML (JSON is valid YAML), applied in one kubectl call.
  return { counts, yaml: items.map((item) => `---\n${JSON.stringify(item)}\n`).join('') };
}

/** One tunnel-group backend made through the API, for every edge to name by id. */
async function createBackend(apiUrl, adminKey) {
  const response = await fetch(`${apiUrl}/backends/tunnel_group`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json', 'svc-version': '2' },
    body: JSON.stringify({ description: 'bench: the backend every edge names', labels: { app: 'bench' } }),
  });
  if (!response.ok)
    throw new Error(`POST /backends/tunnel_group: ${response.status} ${await response.text()}`);
  return (await response.json()).id;
}

async function main() {
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'edgeward-bench-operator-'));
  const clusterDir = join(work, 'cluster');
  let clusterUp = false;
  const results = [];
  try {
    // Set first: controlPlaneDown of a folder with nothing started in it only removes the folder.
    clusterUp = true;
    const { cluster, kubectl, kubectlPath } = await clusterWithCrds(clusterDir, log);
    const certificate = kinds.includes('tlscertificate') ? await benchCertificate(work) : undefined;

    for (const n of sizes) {
      const adminKey = randomBytes(32).toString('hex');
      let server;
      let operator;
      let readyWatches = [];
      try {
        server = await startServer(['--data-dir', join(work, `server-${n}`), '--rate-limit', '0'], {
          EDGEWARD_ADMIN_API_KEY: adminKey,
        });
        const { apiUrl } = server;
        const namespace = `bench-${n}-${randomBytes(3).toString('hex')}`;
        await kubectl(['create', 'namespace', namespace]);
        if (FINALIZER_POLICY) await bindFinalizerPolicy(kubectl, [namespace]);
        const [metricsPort, probePort] = [await freePort(), await freePort()];
        const applyMix = async () => {
          const sharedBackendId = EDGE_BACKEND === 'id' ? await createBackend(apiUrl, adminKey) : undefined;
          const { counts, yaml } = manifests(namespace, n, certificate, sharedBackendId);
          const mix = Object.entries(counts).map(([kind, count]) => `${count} ${KINDS[kind].kind}`);
          log(`N=${n}: applying ${mix.join(' + ')} + ${UNRELATED_SECRETS} unrelated Secrets in ${namespace}`);
          const started = performance.now();
          await kubectl(['apply', ...APPLY_ARGS, '-f', '-'], yaml);
          return { mix, applySeconds: (performance.now() - started) / 1000 };
        };
        let applied;
        if (APPLY_FIRST) applied = await applyMix();
        const operatorStarted = performance.now();
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
            ...OPERATOR_ARGS,
          ],
          { KUBECONFIG: cluster.kubeconfigPath, EDGEWARD_API_KEY: adminKey },
          OPERATOR_FROM === 'dist',
          OPERATOR_NODE_ARGS,
        );
        const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
        await operatorReady(operator, probePort);
        // Applied first, the operator may be at work before /readyz: its counters start at zero.
        const before = APPLY_FIRST
          ? { byLabels: {}, edgeward: 0, kubernetes: 0 }
          : await apiCalls(metricsUrl);
        const pids = {
          'kube-apiserver': cluster.pids.apiserver,
          etcd: cluster.pids.etcd,
          'edgeward server': server.child.pid,
          'edgeward operator': operator.child.pid,
        };
        const cpuBefore = cpuOf(pids);
        const kubectlCpuBefore = cpuSecondsOf(process.pid, { reapedChildren: true });
        const ownCpuBefore = cpuSecondsOf(process.pid);
        readyWatches = kinds.map((kind) =>
          watchReady(kubectlPath, cluster.kubeconfigPath, namespace, KINDS[kind].plural),
        );

        let t0 = performance.now();
        if (!APPLY_FIRST) applied = await applyMix();
        else t0 = operatorStarted;
        const { mix, applySeconds } = applied;
        let readyCount = 0;
        let lastLog = 0;
        const deadline = Date.now() + PER_N_TIMEOUT_MS;
        for (;;) {
          if (operator.child.exitCode !== null) throw new Error(`operator exited:\n${operator.output()}`);
          readyCount = 0;
          for (const watch of readyWatches) readyCount += watch.count();
          if (readyCount === n) break;
          if (Date.now() > deadline) {
            const memory = memoryOf(operator.child.pid);
            throw new Error(
              `N=${n}: only ${readyCount}/${n} CRs Ready after ${PER_N_TIMEOUT_MS / 60_000} min (operator RSS ${memory.rssMiB.toFixed(1)} MiB, peak ${memory.peakMiB.toFixed(1)} MiB, load ${readFileSync('/proc/loadavg', 'utf8').trim()}):\n${operator.output().slice(-4000)}`,
            );
          }
          if (Date.now() - lastLog > 10_000) {
            const memory = memoryOf(operator.child.pid);
            log(
              `N=${n}: ${readyCount}/${n} Ready after ${((performance.now() - t0) / 1000).toFixed(0)} s (RSS ${memory.rssMiB.toFixed(0)} MiB, load ${readFileSync('/proc/loadavg', 'utf8').trim()})`,
            );
            lastLog = Date.now();
          }
          await sleep(READY_CHECK_MS);
        }
        const convergeSeconds = (performance.now() - t0) / 1000;
        await Promise.all(readyWatches.map((watch) => watch.stop()));
        const cpuAfter = cpuOf(pids);
        const cpuSeconds = Object.fromEntries(
          Object.keys(pids).map((name) => [name, cpuAfter[name] - cpuBefore[name]]),
        );
        cpuSeconds['kubectl (apply, watches)'] =
          cpuSecondsOf(process.pid, { reapedChildren: true }) - kubectlCpuBefore;
        cpuSeconds['bench (this process)'] = cpuSecondsOf(process.pid) - ownCpuBefore;
        const converged = await apiCalls(metricsUrl);
        const memoryAtConvergence = memoryOf(operator.child.pid);
        const heapAtConvergence = await heapUsedMiB(metricsUrl);
        const loadAtConvergence = readFileSync('/proc/loadavg', 'utf8').trim();

        log(
          `N=${n}: converged in ${convergeSeconds.toFixed(1)} s; sampling steady state for ${STEADY_SECONDS} s`,
        );
        const steadyStart = await apiCalls(metricsUrl);
        const s0 = performance.now();
        // Sampled in slices too, so a draining tail can be told from a loop that never stops.
        const slices = [];
        for (let slice = 0, last = steadyStart.edgeward; slice < Math.ceil(STEADY_SECONDS / 20); slice++) {
          await sleep(Math.min(20, STEADY_SECONDS - slice * 20) * 1000);
          const now = (await apiCalls(metricsUrl)).edgeward;
          log(`N=${n}: steady +${(slice + 1) * 20} s: ${now - last} edgeward calls in this slice`);
          slices.push(now - last);
          last = now;
        }
        const steadyEnd = await apiCalls(metricsUrl);
        const steadyMinutes = (performance.now() - s0) / 60_000;
        const memoryAfter = memoryOf(operator.child.pid);
        const heapAfter = await heapUsedMiB(metricsUrl);

        // Which calls continue when nothing changes: the label sets whose counters moved.
        const steadyBreakdown = Object.entries(steadyEnd.byLabels)
          .map(([labels, value]) => [labels, value - (steadyStart.byLabels[labels] ?? 0)])
          .filter(([, delta]) => delta > 0)
          .map(([labels, delta]) => `${labels} +${delta}`);
        const edgewardCalls = converged.edgeward - before.edgeward;
        const convergeBreakdown = Object.entries(converged.byLabels)
          .map(([labels, value]) => [labels, value - (before.byLabels[labels] ?? 0)])
          .filter(([, delta]) => delta > 0)
          .map(([labels, delta]) => `${labels} ${delta}`);
        results.push({
          n,
          mix,
          applySeconds,
          convergeSeconds,
          edgewardCalls,
          perResource: edgewardCalls / n,
          kubernetesCalls: converged.kubernetes - before.kubernetes,
          steadyEdgewardPerMin: (steadyEnd.edgeward - steadyStart.edgeward) / steadyMinutes,
          steadyKubernetesPerMin: (steadyEnd.kubernetes - steadyStart.kubernetes) / steadyMinutes,
          rssAtConvergence: memoryAtConvergence.rssMiB,
          rssAfterSteady: memoryAfter.rssMiB,
          peakRss: memoryAfter.peakMiB,
          heapAtConvergence,
          heapAfter,
          loadAtConvergence,
          cpuSeconds,
          loadAfter: readFileSync('/proc/loadavg', 'utf8').trim(),
          slices,
          steadyBreakdown,
          convergeBreakdown,
        });
        printTable(results.at(-1));
      } finally {
        await Promise.all(readyWatches.map((watch) => watch.stop()));
        if (operator) await stopChild(operator.child);
        if (server) await stopChild(server.child);
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
    ['CRs (N)', r.n],
    ['mix', r.mix.join(', ')],
    ['edge backends', EDGE_BACKEND === 'id' ? 'one backend named by id' : "each edge's own (labels)"],
    ['finalizer admission policy', FINALIZER_POLICY ? 'bound (finalizer put on at create)' : 'none'],
    ['unrelated Secrets', UNRELATED_SECRETS],
    ['operator run from', OPERATOR_FROM === 'dist' ? 'dist/cli.js (as the image)' : 'src through tsx'],
    ['kubectl apply (s)', r.applySeconds.toFixed(1)],
    [
      APPLY_FIRST ? 'operator start to all Ready=True (s), applied before' : 'time to all Ready=True (s)',
      r.convergeSeconds.toFixed(1),
    ],
    ['edgeward API calls to converge', r.edgewardCalls],
    ['edgeward API calls per CR', r.perResource.toFixed(2)],
    ['Kubernetes API calls to converge', r.kubernetesCalls],
    [`steady edgeward calls/min (${STEADY_SECONDS} s)`, r.steadyEdgewardPerMin.toFixed(1)],
    ['steady edgeward calls per 20 s slice', r.slices.join(' ')],
    [`steady Kubernetes calls/min (${STEADY_SECONDS} s)`, r.steadyKubernetesPerMin.toFixed(1)],
    ['operator RSS at convergence (MiB)', r.rssAtConvergence.toFixed(1)],
    ['operator RSS after steady (MiB)', r.rssAfterSteady.toFixed(1)],
    ['operator peak RSS VmHWM (MiB)', r.peakRss.toFixed(1)],
    ['operator heap used at convergence (MiB)', r.heapAtConvergence.toFixed(1)],
    ['operator heap used after steady (MiB)', r.heapAfter.toFixed(1)],
    ['load average at convergence', r.loadAtConvergence],
    ['load average after steady', r.loadAfter],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  process.stdout.write(`\nedgeward operator convergence, N=${r.n}\n`);
  for (const [k, v] of rows) process.stdout.write(`  ${k.padEnd(width)}  ${v}\n`);
  process.stdout.write('  CPU seconds from apply to all Ready, by process:\n');
  for (const [name, seconds] of Object.entries(r.cpuSeconds)) {
    process.stdout.write(`    ${name.padEnd(24)} ${seconds.toFixed(1)}\n`);
  }
  process.stdout.write('  calls to converge by label set:\n');
  for (const line of r.convergeBreakdown) process.stdout.write(`    ${line}\n`);
  process.stdout.write('  steady-state calls by label set:\n');
  for (const line of r.steadyBreakdown) process.stdout.write(`    ${line}\n`);
}

killChildrenOnSignal();

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
});
