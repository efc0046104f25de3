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
// Not here: SIGKILL of the operator's leader while Tunnels carry traffic needs a cluster; it is
// measured by test/kubernetes/operator-tunnels-ha.test.ts (printed as [tunnels-ha]).
// Env knobs (defaults in brackets):
//   BENCH_PARALLEL [4]     client loops, each one request at a time
//   BENCH_SETTLE_MS [3000] load before the fault and after recovery
//   BENCH_SCENARIOS [edge-kill,rolling,replica-kill]
// Each line reports requests sent and failed, the failures among requests in flight at the fault,
// and "recovered": from the fault to the end of the last failed request (0 when none failed).
import { loadavg } from 'node:os';
import { HaCluster } from '../test/support/ha-cluster.ts';
import { findPostgresBinaries, startTestCluster } from '../test/support/postgres-cluster.ts';
import { createTestDatabase } from '../test/support/postgres-database.ts';
import { env, machineBusySeconds, sleep } from './tools/kit.mjs';

const parallel = Number(env('BENCH_PARALLEL', 4));
const settleMs = Number(env('BENCH_SETTLE_MS', 3000));
const scenarios = env('BENCH_SCENARIOS', 'edge-kill,rolling,replica-kill').split(',');
const HOST = 'ha.bench.test';
const ADMIN_KEY = 'ewk_bench_high_availability_0123456789abcd';
const EDGES = 3;

async function waitUntil(what, check, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A cluster with two agents on every edge, serving HOST. */
async function startCluster(databaseUrl) {
  const cluster = await HaCluster.start({
    edges: EDGES,
    adminKey: ADMIN_KEY,
    drainDelaySeconds: 2,
    drainTimeoutSeconds: 5,
    ...(databaseUrl ? { databaseUrl } : {}),
  });
  const credential = await cluster.api('POST', '/credentials', { acl: ['bind:app=*'] });
  await cluster.httpsEdge(HOST, { app: 'web' });
  for (const name of ['one', 'two'])
    cluster.startAgent(String(credential.token), 'app=web', await cluster.service(name));
  const allOnEveryEdge = async () => (await cluster.sessionsOf(String(credential.id))).length === 2 * EDGES;
  await waitUntil('two agents on every edge', allOnEveryEdge);
  return { cluster, allOnEveryEdge };
}

function report(name, outcomes, faultAt) {
  const failed = outcomes.filter((outcome) => !outcome.ok);
  const inFlight = failed.filter((outcome) => outcome.startedAt < faultAt && outcome.endedAt >= faultAt);
  const lastFailure = Math.max(faultAt, ...failed.map((outcome) => outcome.endedAt));
  const recovered = failed.length === 0 ? 0 : lastFailure - faultAt;
  console.log(
    `${name.padEnd(13)} sent ${String(outcomes.length).padStart(5)}  failed ${String(failed.length).padStart(3)}` +
      `  (in flight at the fault ${inFlight.length})  recovered ${(recovered / 1000).toFixed(2)} s`,
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
      await waitUntil('the agents back on every edge', allOnEveryEdge);
      await sleep(settleMs);
    })();
    report('edge-kill', await cluster.load(HOST, parallel, stop), faultAt);
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
        await waitUntil('the agents back on every edge', allOnEveryEdge);
      }
      await sleep(settleMs);
    })();
    report('rolling', await cluster.load(HOST, parallel, stop), faultAt);
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
      await waitUntil(
        'every edge serving the new host',
        async () => {
          const answers = await Promise.all(Array.from({ length: EDGES * 2 }, () => cluster.request(host)));
          return answers.every((answer) => answer.ok);
        },
        30_000,
      );
      changeMs = Date.now() - writtenAt;
      await sleep(settleMs);
    })();
    report('replica-kill', await cluster.load(HOST, parallel, stop), faultAt);
    console.log(
      `    a change through the survivor served by every edge after ${(changeMs / 1000).toFixed(2)} s`,
    );
  } finally {
    await cluster.stop();
    await database.drop();
    await postgres.stop();
  }
}

const busyBefore = machineBusySeconds();
const startedAt = Date.now();
console.log(
  `# bench/ha: ${EDGES} edges behind HAProxy, 2 agents, ${parallel} client loops; load ${loadavg()[0].toFixed(2)}`,
);
const runs = { 'edge-kill': edgeKill, rolling, 'replica-kill': replicaKill };
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
