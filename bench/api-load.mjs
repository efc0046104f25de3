// Load benchmark of the management API, read as ratios against a bare Fastify hello-world run in
// the same process tree. Each scenario runs on SQLite (WAL, fsynced before each answer) and on PostgreSQL
// (fsync and synchronous_commit on), so every acknowledged write is durable in both. Loopback only;
// every run is bounded.
//   npm run bench   (BENCH_SECONDS=10 BENCH_CONNECTIONS=20 BENCH_STORES=sqlite,postgres by default;
//   BENCH_SERVER_NODE_ARGS: node flags for the edgeward server alone)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { SQLITE_FILE } from '../src/server/store/database.ts';
import { findPostgresBinaries, startTestCluster } from '../test/support/postgres-cluster.ts';
import { createTestDatabase } from '../test/support/postgres-database.ts';
import { env, freePort, machineBusySeconds, treeCpuSeconds } from './tools/kit.mjs';

const seconds = Number(env('BENCH_SECONDS', 10));
const connections = Number(env('BENCH_CONNECTIONS', 20));
const stores = env('BENCH_STORES', 'sqlite,postgres').split(',');
// Node flags for the edgeward server only, e.g. `--max-semi-space-size=2` (a smaller young generation).
const serverNodeArgs = env('BENCH_SERVER_NODE_ARGS', '')
  .split(/\s+/)
  .filter((arg) => arg !== '');
const key = `ewk_bench_${randomBytes(16).toString('hex')}`;
const root = fileURLToPath(new URL('..', import.meta.url));
const headers = { authorization: `Bearer ${key}`, 'svc-version': '2', 'content-type': 'application/json' };

async function waitForHealthy(url) {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} did not become healthy`);
}

function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  return exited;
}

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
}

/** autocannon against `options.url`, with the CPU the process `pid` (and its children) spent meanwhile. */
async function load(pid, options) {
  const cpuBefore = treeCpuSeconds([pid]);
  const result = await autocannon({ connections, duration: seconds, ...options });
  const cpuSeconds = treeCpuSeconds([pid]) - cpuBefore;
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(
      `${options.method ?? 'GET'} ${options.url}: ${result.non2xx} non-2xx, ${result.errors} errors`,
    );
  }
  return {
    reqPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuMicrosPerRequest: (cpuSeconds * 1e6) / result.requests.total,
  };
}

/** A baseline server (`bench/<script>`), which prints `{"listen": url}` once it listens. */
async function startBaseline(script, args = []) {
  const child = spawn(process.execPath, [join(root, 'bench', script), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /"listen":"([^"]+)"/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child, url };
}

/** `edgeward server` from the build, on the given store, as a user would run it (event delivery on). */
async function startEdgeward(store, dataDir) {
  const port = await freePort();
  const args = [
    ...serverNodeArgs,
    join(root, 'dist/cli.js'),
    'server',
    '--data-dir',
    dataDir,
    '--port',
    String(port),
    '--rate-limit',
    '0',
  ];
  const extraEnv = {};
  if (store.databaseUrl) {
    args.push('--database-url', store.databaseUrl);
    extraEnv.EDGEWARD_SECRET_KEY = randomBytes(32).toString('base64');
  }
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...extraEnv, EDGEWARD_ADMIN_API_KEY: key, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealthy(url);
  return { child, url };
}

const scenarios = [
  // floor: also measured against bench/floor-server.mjs, on the same store.
  {
    name: 'GET /ip_policies/{id}',
    floor: true,
    options: (url, id) => ({ url: `${url}/ip_policies/${id}`, headers }),
  },
  {
    name: 'GET /ip_policies?limit=20',
    floor: true,
    options: (url) => ({ url: `${url}/ip_policies?limit=20`, headers }),
  },
  {
    name: 'POST /ip_policies (durable create)',
    floor: true,
    options: (url) => ({
      url: `${url}/ip_policies`,
      method: 'POST',
      headers,
      body: JSON.stringify({ description: 'bench', metadata: '{"load":true}' }),
    }),
  },
  {
    name: 'POST /credentials (token + hash)',
    options: (url) => ({
      url: `${url}/credentials`,
      method: 'POST',
      headers,
      body: JSON.stringify({ acl: ['bind:*.example.com'] }),
    }),
  },
];

const machineBefore = machineBusySeconds();
const started = Date.now();
const rows = [];
const memory = [];
let cluster;
try {
  const hello = await startBaseline('hello-server.mjs');
  let baseline;
  try {
    baseline = await load(hello.child.pid, { url: `${hello.url}/` });
    memory.push(`hello-world ${rssMiB(hello.child.pid).toFixed(0)} MiB`);
  } finally {
    await stopChild(hello.child);
  }
  const row = (store, scenario, result, floor) => ({
    store,
    scenario,
    'req/s': Math.round(result.reqPerSecond),
    'x baseline': (result.reqPerSecond / baseline.reqPerSecond).toFixed(2),
    'x floor': floor === undefined ? '' : (result.reqPerSecond / floor.reqPerSecond).toFixed(2),
    'p50 ms': result.p50,
    'p99 ms': result.p99,
    'cpu µs/req': Math.round(result.cpuMicrosPerRequest),
  });
  rows.push(row('-', 'fastify hello-world (baseline)', baseline));

  for (const storeName of stores) {
    const dataDir = mkdtempSync(join(tmpdir(), 'edgeward-bench-'));
    const store = { name: storeName };
    if (storeName === 'postgres') {
      const binaries = findPostgresBinaries();
      if ('missing' in binaries) {
        console.error(`skipping PostgreSQL: ${binaries.missing}`);
        continue;
      }
      cluster = await startTestCluster(binaries.dir, (line) => console.error(line), { durable: true });
      if ('missing' in cluster) {
        console.error(`skipping PostgreSQL: ${cluster.missing}`);
        cluster = undefined;
        continue;
      }
      store.databaseUrl = (await createTestDatabase(cluster.adminUrl)).url;
    }
    const server = await startEdgeward(store, dataDir);
    try {
      const created = await fetch(`${server.url}/ip_policies`, {
        method: 'POST',
        headers,
        body: '{"description":"bench"}',
      });
      const { id } = await created.json();
      // A list page of 20 real rows.
      for (let i = 0; i < 20; i++) {
        await (await fetch(`${server.url}/ip_policies`, { method: 'POST', headers, body: '{}' })).text();
      }
      // The same requests to bare Fastify and the driver alone, while edgeward holds its connections.
      const floors = new Map();
      const floor = await startBaseline('floor-server.mjs', [
        store.databaseUrl ?? join(dataDir, SQLITE_FILE),
      ]);
      try {
        for (const scenario of scenarios.filter((s) => s.floor)) {
          const result = await load(floor.child.pid, scenario.options(floor.url, id));
          floors.set(scenario, result);
          rows.push(row(storeName, `${scenario.name}: floor (Fastify + driver alone)`, result));
        }
        memory.push(`${storeName} floor ${rssMiB(floor.child.pid).toFixed(0)} MiB`);
      } finally {
        await stopChild(floor.child);
      }
      for (const scenario of scenarios) {
        const result = await load(server.child.pid, scenario.options(server.url, id));
        rows.push(row(storeName, scenario.name, result, floors.get(scenario)));
      }
      memory.push(`${storeName} ${rssMiB(server.child.pid).toFixed(0)} MiB`);
    } finally {
      await stopChild(server.child);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
} finally {
  await cluster?.stop();
}

const wallSeconds = (Date.now() - started) / 1000;
const machineAfter = machineBusySeconds();
console.log(
  `\nedgeward API load: ${seconds} s per scenario, ${connections} connections, loopback; 'x baseline' is req/s as a share of the bare Fastify row, 'x floor' of the same request to bare Fastify and the database driver alone\n`,
);
console.table(rows);
console.log(`RSS after the scenarios: ${memory.join(', ')}`);
const busy =
  machineBefore === undefined || machineAfter === undefined
    ? ''
    : `, whole machine busy ${((machineAfter - machineBefore) / wallSeconds).toFixed(2)} cores on average`;
console.log(
  `load average at the end: ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}${busy}`,
);
