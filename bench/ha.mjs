// High-availability benchmark: what a fault costs the traffic, measured with real processes. Three
// `edgeward edge` processes behind HAProxy (Debian's, TCP mode, /readyz checks every 300 ms), two
// `edgeward agent` processes each holding a session on every edge, curl as the public client (a new
// connection per request, through the load balancer, to an HTTPS edge), all on 127.0.0.1.
//   node --import tsx bench/ha.mjs          (npm run bench:ha)
// Scenarios (BENCH_SCENARIOS, comma separated):
//   edge-kill     SIGKILL of one edge mid-load, a new process in its place
//   rolling       SIGTERM of every edge in turn (each drains: --drain-delay 2, --drain-timeout 5),
//                 a new process in its place before the next goes
//   replica-kill  two `edgeward server` replicas on PostgreSQL, the edges naming both: SIGKILL of
//                 the replica holding the feeds, then a configuration change through the survivor
//                 (skipped, with the reason, without PostgreSQL binaries)
//   operator-kill two `edgeward operator` replicas (leader election, default timings) on a throwaway
//                 kube-apiserver + etcd (`npm run tools` builds them), each running the agents of two
//                 Tunnels (HTTPS and TCP) on every edge: SIGKILL of the leader
// Env knobs (defaults in brackets):
//   BENCH_PARALLEL [4]     client loops, each one request at a time
//   BENCH_SETTLE_MS [3000] load before the fault and after recovery
//   BENCH_STREAMS [3]      long TCP stream loops (through a TCP edge to an echo service; in
//                          step, round robin puts one on every edge)
//   BENCH_STREAM_MS [2000] how long each stream carries data (1 KiB every 50 ms, all checked)
//   BENCH_SCENARIOS [edge-kill,rolling,replica-kill,operator-kill]
// Each line reports requests (then streams) sent and failed, those in flight at the fault and how
// many of them failed, and "recovered": from the fault to the end of the last failure (0 when none).
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlPlaneDown } from '../src/dev-cluster/control-plane.ts';
import { freePort } from '../src/dev-cluster/free-port.ts';
import { HaCluster } from '../test/support/ha-cluster.ts';
import { findPostgresBinaries, startTestCluster } from '../test/support/postgres-cluster.ts';
import { createTestDatabase } from '../test/support/postgres-database.ts';
import { env, machineBusySeconds, sleep } from './tools/kit.mjs';
import { clusterWithCrds, GROUP_VERSION, startChild, stopChild, waitUntil } from './tools/operator-kit.mjs';

const parallel = Number(env('BENCH_PARALLEL', 4));
const settleMs = Number(env('BENCH_SETTLE_MS', 3000));
const streamsParallel = Number(env('BENCH_STREAMS', 3));
const streamMs = Number(env('BENCH_STREAM_MS', 2000));
const scenarios = env('BENCH_SCENARIOS', 'edge-kill,rolling,replica-kill,operator-kill').split(',');
const HOST = 'ha.bench.test';
const ADMIN_KEY = 'ewk_bench_high_availability_0123456789abcd';
const EDGES = 3;

const startEdges = (databaseUrl) =>
  HaCluster.start({
    edges: EDGES,
    adminKey: ADMIN_KEY,
    drainDelaySeconds: 2,
    drainTimeoutSeconds: 5,
    ...(databaseUrl ? { databaseUrl } : {}),
  });

/** A cluster with two agents on every edge for HOST, and two for the TCP edge's echo service. */
async function startCluster(databaseUrl) {
  const cluster = await startEdges(databaseUrl);
  const credential = await cluster.api('POST', '/credentials', { acl: ['bind:app=*'] });
  await cluster.httpsEdge(HOST, { app: 'web' });
  await cluster.tcpEdge({ app: 'echo' });
  const echo = await cluster.echoService();
  for (const name of ['one', 'two']) {
    cluster.startAgent(
      String(credential.token),
      'app=web',
      `http://127.0.0.1:${await cluster.service(name)}`,
    );
    cluster.startAgent(String(credential.token), 'app=echo', `tcp://127.0.0.1:${echo}`);
  }
  const allOnEveryEdge = async () => (await cluster.sessionsOf(String(credential.id))).length === 4 * EDGES;
  await waitUntil('four agents on every edge', 30_000, allOnEveryEdge);
  return { cluster, allOnEveryEdge };
}

/** HTTPS requests and long TCP streams until `stop` settles; both reported under `name`. */
async function traffic(cluster, name, stop, faultAt) {
  const [requests, streams] = await Promise.all([
    cluster.load(HOST, parallel, stop),
    cluster.loop(streamsParallel, stop, () => cluster.stream(streamMs)),
  ]);
  report(name, requests, faultAt());
  report(`  streams`, streams, faultAt());
}

function report(name, outcomes, faultAt) {
  const failed = outcomes.filter((outcome) => !outcome.ok);
  const inFlight = (list) =>
    list.filter((outcome) => outcome.startedAt < faultAt && outcome.endedAt >= faultAt);
  const lastFailure = Math.max(faultAt, ...failed.map((outcome) => outcome.endedAt));
  const recovered = failed.length === 0 ? 0 : lastFailure - faultAt;
  console.log(
    `${name.padEnd(13)} sent ${String(outcomes.length).padStart(5)}  failed ${String(failed.length).padStart(3)}` +
      `  (in flight at the fault ${inFlight(outcomes).length}, of them failed ${inFlight(failed).length})` +
      `  recovered ${(recovered / 1000).toFixed(2)} s`,
  );
  for (const failure of failed.slice(0, 5)) console.log(`    ${failure.detail}`);
}

async function edgeKill() {
  const { cluster, allOnEveryEdge } = await startCluster();
  try {
    let faultAt = 0;
    const stop = (async () => {
      await sleep(settleMs);
      faultAt = Date.now();
      await cluster.replaceEdge(1, 'SIGKILL');
      await waitUntil('the agents back on every edge', 30_000, allOnEveryEdge);
      await sleep(settleMs);
    })();
    await traffic(cluster, 'edge-kill', stop, () => faultAt);
  } finally {
    await cluster.stop();
  }
}

async function rolling() {
  const { cluster, allOnEveryEdge } = await startCluster();
  try {
    let faultAt = 0;
    const drains = [];
    const stop = (async () => {
      await sleep(settleMs);
      faultAt = Date.now();
      for (let index = 0; index < EDGES; index++) {
        drains.push((await cluster.replaceEdge(index, 'SIGTERM')).stoppedInMs);
        await waitUntil('the agents back on every edge', 30_000, allOnEveryEdge);
      }
      await sleep(settleMs);
    })();
    await traffic(cluster, 'rolling', stop, () => faultAt);
    console.log(`    drain took ${drains.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(', ')}`);
  } finally {
    await cluster.stop();
  }
}

async function replicaKill() {
  const binaries = findPostgresBinaries();
  if ('missing' in binaries) {
    console.log(`replica-kill  skipped: ${binaries.missing}`);
    return;
  }
  const postgres = await startTestCluster(binaries.dir, (line) => console.error(line), { durable: true });
  if ('missing' in postgres) {
    console.log(`replica-kill  skipped: ${postgres.missing}`);
    return;
  }
  const database = await createTestDatabase(postgres.adminUrl);
  const { cluster } = await startCluster(database.url);
  try {
    let faultAt = 0;
    let changeMs = 0;
    const stop = (async () => {
      await sleep(settleMs);
      faultAt = Date.now();
      await cluster.servers[0].process.kill('SIGKILL');
      // A new host through the survivor: how long until every edge serves it.
      const host = `new.${HOST}`;
      const writtenAt = Date.now();
      await cluster.httpsEdge(host, { app: 'web' });
      await waitUntil('every edge serving the new host', 30_000, async () => {
        const answers = await Promise.all(Array.from({ length: EDGES * 2 }, () => cluster.request(host)));
        return answers.every((answer) => answer.ok);
      });
      changeMs = Date.now() - writtenAt;
      await sleep(settleMs);
    })();
    await traffic(cluster, 'replica-kill', stop, () => faultAt);
    console.log(
      `    a change through the survivor served by every edge after ${(changeMs / 1000).toFixed(2)} s`,
    );
  } finally {
    await cluster.stop();
    await database.drop();
    await postgres.stop();
  }
}

/** `edgeward operator` replica `name` watching `namespace`, its agents dialing the load balancer. */
async function startOperator(name, cluster, kube, namespace) {
  const metricsPort = await freePort();
  const operator = startChild(
    name,
    [
      'operator',
      '--api-url',
      cluster.apiUrl,
      '--watch-namespaces',
      namespace,
      '--metrics-addr',
      `127.0.0.1:${metricsPort}`,
      '--probe-addr',
      'off',
      '--edge-addr',
      `127.0.0.1:${cluster.lb.tunnel}`,
      '--edge-ca',
      join(cluster.dataDir, 'edge', 'tunnel.crt'),
      '--edge-server-name',
      'localhost',
      '--leader-elect',
      '--leader-election-namespace',
      namespace,
    ],
    { KUBECONFIG: kube.cluster.kubeconfigPath, EDGEWARD_API_KEY: ADMIN_KEY },
  );
  const leading = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    return /^edgeward_operator_leader 1$/m.test(text);
  };
  return { ...operator, leading };
}

async function operatorKill() {
  const dir = mkdtempSync(join(tmpdir(), 'edgeward-bench-ha-kube-'));
  const operators = [];
  let cluster;
  try {
    const kube = await clusterWithCrds(dir, (line) => console.error(`[kube] ${line}`));
    const namespace = 'bench-ha';
    await kube.kubectl(['create', 'namespace', namespace]);
    cluster = await startEdges();
    await cluster.httpsEdge(HOST, { app: 'web' });
    await cluster.tcpEdge({ app: 'echo' });
    const web = await cluster.service('operator');
    const echo = await cluster.echoService();
    const object = (kind, name, spec) => ({
      apiVersion: GROUP_VERSION,
      kind,
      metadata: { name, namespace },
      spec,
    });
    await kube.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          object('TunnelCredential', 'agents', { acl: ['bind:app=*'] }),
          object('Tunnel', 'web', {
            labels: { app: 'web' },
            forward: { url: `http://127.0.0.1:${web}` },
            credentialRef: { name: 'agents' },
          }),
          object('Tunnel', 'echo', {
            labels: { app: 'echo' },
            forward: { url: `tcp://127.0.0.1:${echo}` },
            credentialRef: { name: 'agents' },
          }),
        ],
      }),
    );
    for (const name of ['first', 'second'])
      operators.push(await startOperator(name, cluster, kube, namespace));
    const sessions = async () => (await cluster.api('GET', '/tunnel_sessions')).tunnel_sessions.length;
    // Two Tunnels, each run by both replicas, on every edge.
    await waitUntil(
      'both replicas’ agents on every edge',
      180_000,
      async () => (await sessions()) === 2 * 2 * EDGES,
    );
    let leader;
    await waitUntil('one leader', 30_000, async () => {
      const leading = await Promise.all(operators.map((operator) => operator.leading().catch(() => false)));
      leader = leading.filter(Boolean).length === 1 ? operators[leading.indexOf(true)] : undefined;
      return leader !== undefined;
    });
    const survivor = operators.find((operator) => operator !== leader);
    let faultAt = 0;
    let leadsAfter = 0;
    const stop = (async () => {
      await sleep(settleMs);
      faultAt = Date.now();
      leader.child.kill('SIGKILL');
      await waitUntil('the survivor to lead', 60_000, () => survivor.leading());
      leadsAfter = Date.now() - faultAt;
      await waitUntil(
        'the dead replica’s sessions gone',
        60_000,
        async () => (await sessions()) === 2 * EDGES,
      );
      await sleep(settleMs);
    })();
    await traffic(cluster, 'operator-kill', stop, () => faultAt);
    console.log(`    the survivor led after ${(leadsAfter / 1000).toFixed(2)} s (15 s lease, as by default)`);
  } finally {
    for (const operator of operators) await stopChild(operator.child);
    await cluster?.stop();
    await controlPlaneDown(dir).catch((error) => console.error(`control plane: ${error.message}`));
    rmSync(dir, { recursive: true, force: true });
  }
}

const busyBefore = machineBusySeconds();
const startedAt = Date.now();
console.log(
  `# bench/ha: ${EDGES} edges behind HAProxy, 2 agents per service, ${parallel} request loops, ` +
    `${streamsParallel} stream loops of ${streamMs / 1000} s; load ${loadavg()[0].toFixed(2)}`,
);
const runs = { 'edge-kill': edgeKill, rolling, 'replica-kill': replicaKill, 'operator-kill': operatorKill };
for (const name of scenarios) {
  const run = runs[name];
  if (!run) throw new Error(`BENCH_SCENARIOS: unknown scenario ${name}`);
  await run();
}
const busy = machineBusySeconds();
if (busyBefore !== undefined && busy !== undefined)
  console.log(
    `# machine busy ${(((busy - busyBefore) / ((Date.now() - startedAt) / 1000)) * 100).toFixed(0)}% of one core on average`,
  );
process.exit(0);
