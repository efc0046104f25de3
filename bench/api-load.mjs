// Load benchmark of the management API: create/get/list throughput and latency next to a bare
// Fastify hello-world on the same machine in the same run. Loopback only; every run is bounded.
//   npm run bench            (BENCH_SECONDS=10 BENCH_CONNECTIONS=20 by default)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const key = 'ewk_bench_admin_key_0123456789abcdef';
const root = fileURLToPath(new URL('..', import.meta.url));

async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function waitForHealthy(url) {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} did not become healthy`);
}

function startProcess(args, env = {}) {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /"listen":"([^"]+)"/.exec(out);
      if (match) resolve({ child, url: match[1] });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
}

async function load(name, options) {
  const result = await autocannon({ connections, duration: seconds, ...options });
  return {
    scenario: name,
    'req/s': Math.round(result.requests.average),
    'p50 ms': result.latency.p50,
    'p99 ms': result.latency.p99,
    requests: result.requests.total,
    'non-2xx': result.non2xx,
    errors: result.errors,
  };
}

const headers = { authorization: `Bearer ${key}`, 'svc-version': '2', 'content-type': 'application/json' };
const rows = [];

const hello = await startProcess([join(root, 'bench/hello-server.mjs')]);
rows.push(await load('fastify hello-world (baseline)', { url: `${hello.url}/` }));
hello.child.kill();

const dataDir = mkdtempSync(join(tmpdir(), 'edgeward-bench-'));
const port = await freePort();
const child = spawn(
  process.execPath,
  [join(root, 'dist/cli.js'), 'server', '--data-dir', dataDir, '--port', String(port), '--rate-limit', '0'],
  {
    env: { ...process.env, EDGEWARD_ADMIN_API_KEY: key, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);
const server = { child, url: `http://127.0.0.1:${port}` };
await waitForHealthy(server.url);
try {
  const created = await fetch(`${server.url}/ip_policies`, {
    method: 'POST',
    headers,
    body: '{"description":"bench"}',
  });
  const { id } = await created.json();
  rows.push(
    await load('POST /ip_policies (create)', {
      url: `${server.url}/ip_policies`,
      method: 'POST',
      headers,
      body: JSON.stringify({ description: 'bench', metadata: '{"load":true}' }),
    }),
  );
  rows.push(await load('GET /ip_policies/{id}', { url: `${server.url}/ip_policies/${id}`, headers }));
  rows.push(
    await load('GET /ip_policies?limit=20 (list)', { url: `${server.url}/ip_policies?limit=20`, headers }),
  );
  rows.push(
    await load('POST /credentials (token + hash)', {
      url: `${server.url}/credentials`,
      method: 'POST',
      headers,
      body: JSON.stringify({ acl: ['bind:*.example.com'] }),
    }),
  );
  const rss = rssMiB(server.child.pid);
  console.log(
    `\nedgeward API load: ${seconds}s per scenario, ${connections} connections, loopback, SQLite (WAL, synchronous=FULL)\n`,
  );
  console.table(rows);
  console.log(`edgeward server RSS after the run: ${rss.toFixed(0)} MiB`);
} finally {
  server.child.kill();
  rmSync(dataDir, { recursive: true, force: true });
}
