// Tunnel benchmark: HTTP req/s + latency and raw TCP throughput through edgeward, next to a direct
// connection, OpenSSH remote forwarding (`ssh -R`) and rathole (tcp, tls and noise transports), all
// on 127.0.0.1 in one run so the ratios are fair. Every run is bounded.
//   node bench/tunnel.mjs
// Scenarios (BENCH_SCENARIOS, comma separated):
//   direct              client → service
//   edgeward            the product as installed: `edgeward server` (control plane), a separate
//                       `edgeward edge`, and one `edgeward agent` per service, all from dist/cli.js and
//                       configured through the HTTP API (credential, tunnel group, reserved address,
//                       TCP edge); the public client connects to the TCP edge's port
//   transport           "edgeward transport only": TunnelEndpoint + Agent from dist/ assembled by hand
//                       (no control plane, a plain TCP front), to tell the transport from the product
//   openssh, rathole    the baselines
// Env knobs (defaults in brackets):
//   BENCH_SECONDS [10]           autocannon duration per scenario; BENCH_WARMUP_SECONDS [1] before it
//   BENCH_CONNECTIONS [50]       autocannon connections
//   BENCH_MIB [512]              MiB pushed through one connection (upload to a sink, download from
//                                a source); the parallel run moves the same total over BENCH_PARALLEL
//   BENCH_PARALLEL [4]           connections of the parallel upload
//   BENCH_TRANSFER_TIMEOUT [120] seconds before one transfer counts as failed
//   BENCH_TRANSFER_TRIES [3]     tries per transfer until one is complete (failures are reported)
//   BENCH_SMALL_DOWNLOADS [20]   then this many downloads of 1–4 MiB (random sizes), each checked for
//                                a short read: the tail a half-closed target or a reset stream loses
//   BENCH_SCENARIOS [direct,edgeward,transport,openssh,rathole]   which scenarios to run
//   BENCH_RATHOLE_TRANSPORTS [tcp,tls,noise]            rathole transports to run
//   BENCH_SSH_CIPHER             an OpenSSH cipher to force (default: the client's first choice)
//   BENCH_H2_WINDOW              experiment: also run "edgeward transport only" with this HTTP/2 window
//                                (bytes) on both sides (stream initialWindowSize + connection window),
//                                by patching node:http2 in the bench's child processes, src/ untouched
//   BENCH_CPU_PROF               a directory: run the edgeward edge and agents with
//                                `node --cpu-prof --cpu-prof-dir DIR` (profiles written when they stop)
//   BENCH_BUILD [1]              0 skips `npm run build` (the bench runs edgeward from dist/)
//   BENCH_DIST [dist/]           run edgeward from another build (a patched copy; keep it inside the
//                                repository, e.g. ./dist-patched, so node_modules and package.json resolve)
//   RATHOLE_BIN, RATHOLE_VERSION, RATHOLE_FEATURES: see bench/tools/rathole.mjs
// Processes: the load generator is this process; the services (HTTP hello + bulk sink/source) run in
// a child process of their own; so do the edgeward server, edge and agents (each under a small
// `--role guard` parent that stops it when this process goes), and the hand-assembled edge and agent
// (`node bench/tunnel.mjs --role edge|agent`).
// The `cpu` columns: CPU time of the tunnel's own processes (edge + agents, sshd + ssh, rathole
// server + client; not the services, not the load generator, not the control plane), read from /proc,
// per HTTP request and per GiB moved by the three bulk transfers.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { cpus, loadavg, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  apiClient,
  env,
  exitWithParent,
  freePort,
  machineBusySeconds,
  sleep,
  startCli as startKitCli,
  treeCpuSeconds,
  waitListening,
} from './tools/kit.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
// The build the edge and agent run: dist/ by default; BENCH_DIST points at another copy (to try a change).
const dist = process.env.BENCH_DIST ?? join(root, 'dist');
const self = fileURLToPath(import.meta.url);
const roleIndex = process.argv.indexOf('--role');
const role = roleIndex === -1 ? 'main' : process.argv[roleIndex + 1];

// ---------------------------------------------------------------------------------------------
// Child roles
// ---------------------------------------------------------------------------------------------

function announce(info) {
  process.stdout.write(`${JSON.stringify(info)}\n`);
}

/**
 * `--role guard -- COMMAND ARGS…`: runs COMMAND with this process's stdout and stderr (no copy in
 * between, so it costs nothing while data flows), and stops it when the bench goes: stdin closing
 * (even if the bench was killed -9) or SIGTERM. Exits with COMMAND's code.
 */
function runGuard(argv) {
  const [command, ...args] = argv.slice(argv.indexOf('--') + 1);
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  let stopping = false;
  const stopChild = () => {
    if (stopping) return;
    stopping = true;
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 2500).unref();
  };
  process.stdin.resume();
  process.stdin.on('end', stopChild);
  process.stdin.on('error', stopChild);
  process.on('SIGTERM', stopChild);
  process.on('SIGINT', stopChild);
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
  child.on('error', (error) => {
    console.error(`guard: ${command}: ${error.message}`);
    process.exit(127);
  });
}

/** The services behind every tunnel: a node:http hello-world, and a bulk TCP sink/source. */
async function runServices() {
  exitWithParent();
  const body = 'hello world\n';
  const hello = http.createServer({ keepAliveTimeout: 60_000 }, (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
    response.end(body);
  });
  hello.listen(0, '127.0.0.1');
  await once(hello, 'listening');
  // Bulk protocol: the client sends 'U' or 'D' and a u64 (big endian) byte count. 'U': the server
  // reads that many bytes, then answers 'K'. 'D': the server sends that many bytes, then ends.
  const block = Buffer.alloc(256 * 1024, 0x5a);
  const bulk = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
    socket.on('error', () => {});
    let header = Buffer.alloc(0);
    let remaining = -1;
    socket.on('data', (chunk) => {
      let data = chunk;
      if (remaining < 0) {
        header = Buffer.concat([header, data]);
        if (header.length < 9) return;
        remaining = Number(header.readBigUInt64BE(1));
        data = header.subarray(9);
        if (header[0] === 0x44 /* D */) {
          sendBytes(socket, remaining, block).then(
            () => socket.end(),
            () => socket.destroy(),
          );
          return;
        }
      }
      if (header[0] !== 0x55 /* U */ || remaining <= 0) return;
      remaining -= data.length;
      if (remaining <= 0) socket.end('K');
    });
  });
  bulk.listen(0, '127.0.0.1');
  await once(bulk, 'listening');
  announce({ http: hello.address().port, bulk: bulk.address().port });
}

function drained(socket) {
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      cleanup();
      resolve();
    };
    const onClose = () => {
      cleanup();
      reject(new Error('closed'));
    };
    const cleanup = () => {
      socket.off('drain', onDrain);
      socket.off('close', onClose);
    };
    socket.on('drain', onDrain);
    socket.on('close', onClose);
  });
}

async function sendBytes(socket, total, block) {
  let left = total;
  while (left > 0) {
    const piece = left >= block.length ? block : block.subarray(0, left);
    left -= piece.length;
    if (!socket.write(piece)) await drained(socket);
  }
}

/**
 * Experiment (BENCH_H2_WINDOW): raise HTTP/2 flow-control windows without touching src/. The built
 * modules call `http2.connect` / `http2.createServer` on node:http2's default export at call time.
 */
async function patchHttp2Window(window) {
  if (!window) return;
  const http2 = (await import('node:http2')).default;
  // BENCH_H2_FRAME (experiment): also accept DATA frames up to this size (default 16384).
  const frame = process.env.BENCH_H2_FRAME ? { maxFrameSize: Number(process.env.BENCH_H2_FRAME) } : {};
  // BENCH_H2_WINDOW_PARTS (experiment): which windows to raise, `stream`, `connection` or both.
  const parts = (process.env.BENCH_H2_WINDOW_PARTS ?? 'stream,connection').split(',');
  const stream = parts.includes('stream') ? { initialWindowSize: window } : {};
  const connection = parts.includes('connection');
  const connect = http2.connect;
  http2.connect = (authority, options = {}, listener) => {
    const settings = { ...options.settings, ...stream, ...frame };
    const session = connect(authority, { ...options, settings }, listener);
    // After the caller's own 'connect' handlers (src/ sets its window there), so this one wins.
    if (connection) session.once('connect', () => setImmediate(() => session.setLocalWindowSize(window)));
    return session;
  };
  const createServer = http2.createServer;
  http2.createServer = (options = {}, handler) => {
    const settings = { ...options.settings, ...stream, ...frame };
    const server = createServer({ ...options, settings }, handler);
    if (connection) server.on('session', (session) => setImmediate(() => session.setLocalWindowSize(window)));
    return server;
  };
}

/** The edge: edgeward's TunnelEndpoint (from dist/) and one plain TCP front per named target. */
async function runEdge(config) {
  exitWithParent();
  await patchHttp2Window(config.h2Window);
  const { TunnelEndpoint } = await import(pathToFileURL(join(dist, 'edge/tunnel/tunnel-endpoint.js')).href);
  const { pipeline } = await import('node:stream');
  let sessions = 0;
  const endpoint = new TunnelEndpoint({
    tls: { cert: readFileSync(config.cert), key: readFileSync(config.key) },
    async authenticate(hello) {
      if (hello.authtoken !== config.token) throw new Error('bad token');
      return { id: `ts_bench${++sessions}`, credentialId: 'cr_bench' };
    },
  });
  const tunnel = await endpoint.listen(0, '127.0.0.1');
  const fronts = {};
  for (const target of config.targets) {
    // What a TCP edge does with each public connection: carry it over a stream of the session
    // whose agent serves that target. openStream takes the public source address where supported.
    const front = net.createServer({ noDelay: true, allowHalfOpen: true }, (client) => {
      client.on('error', () => {});
      // info.labels in the current build, info.hello.labels in the first one.
      const session = endpoint
        .sessions()
        .find((candidate) => (candidate.info.labels ?? candidate.info.hello?.labels)?.target === target);
      if (!session) {
        client.destroy();
        return;
      }
      session.openStream({ ip: client.remoteAddress, port: client.remotePort }).then(
        (stream) => pipeline(client, stream, client, () => client.destroy()),
        () => client.destroy(),
      );
    });
    front.listen(0, '127.0.0.1');
    await once(front, 'listening');
    fronts[target] = front.address().port;
  }
  announce({ tunnel: tunnel.port, fronts });
}

/** The agent side: one edgeward Agent (from dist/) per target, as `edgeward agent` would run. */
async function runAgent(config) {
  exitWithParent();
  await patchHttp2Window(config.h2Window);
  const { Agent } = await import(pathToFileURL(join(dist, 'agent/agent.js')).href);
  const { parseForwardTarget } = await import(pathToFileURL(join(dist, 'agent/forward-target.js')).href);
  const ca = readFileSync(config.ca);
  const ready = [];
  for (const [target, port] of Object.entries(config.forward)) {
    const agent = new Agent({
      edgeAddr: config.edgeAddr,
      authtoken: config.token,
      labels: { target },
      forward: parseForwardTarget(`tcp://127.0.0.1:${port}`),
      agentVersion: 'bench',
      ca,
      serverName: config.serverName,
    });
    agent.on('refused', (reason) => {
      console.error(`agent ${target} refused: ${reason}`);
      process.exit(1);
    });
    ready.push(once(agent, 'session'));
    agent.start();
  }
  const ids = await Promise.all(ready);
  announce({ sessions: ids.map(([id]) => id) });
}

// ---------------------------------------------------------------------------------------------
// The load generator and the scenarios
// ---------------------------------------------------------------------------------------------

async function main() {
  const seconds = Number(env('BENCH_SECONDS', 10));
  const warmup = Number(env('BENCH_WARMUP_SECONDS', 1));
  const connections = Number(env('BENCH_CONNECTIONS', 50));
  const mib = Number(env('BENCH_MIB', 512));
  const parallel = Number(env('BENCH_PARALLEL', 4));
  const transferTimeoutMs = Number(env('BENCH_TRANSFER_TIMEOUT', 120)) * 1000;
  const tries = Number(env('BENCH_TRANSFER_TRIES', 3));
  const smallDownloads = Number(env('BENCH_SMALL_DOWNLOADS', 20));
  const wanted = new Set(env('BENCH_SCENARIOS', 'direct,edgeward,transport,openssh,rathole').split(','));
  const ratholeTransports = env('BENCH_RATHOLE_TRANSPORTS', 'tcp,tls,noise').split(',');
  const h2Window = process.env.BENCH_H2_WINDOW ? Number(process.env.BENCH_H2_WINDOW) : undefined;
  const cpuProfDir = process.env.BENCH_CPU_PROF || undefined;
  const { default: autocannon } = await import('autocannon');

  const children = [];
  const killAll = () => {
    for (const child of children.splice(0).reverse()) if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

  const log = (line) => console.error(`[bench] ${line}`);
  const started = Date.now();
  // The machine may be shared: say how busy it was, before and after.
  const loadAverage = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
  const loadBefore = loadAverage();
  const busyBefore = machineBusySeconds();
  const benchCpuBefore = treeCpuSeconds([process.pid]);

  if (env('BENCH_BUILD', '1') !== '0' && (wanted.has('edgeward') || wanted.has('transport'))) {
    log('npm run build (BENCH_BUILD=0 skips)');
    const build = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
    if (build.status !== 0)
      log(`npm run build failed; using dist/ as it is:\n${(build.stdout + build.stderr).slice(-1500)}`);
  }

  const dir = mkdtempSync(join(tmpdir(), 'edgeward-tunnel-bench-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const pki = makePki(dir);

  /** Starts a child, resolves with the first JSON line it prints. */
  function startChild(command, args, options = {}) {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], ...options });
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    const info = new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk) => {
        out += chunk;
        const line = out.split('\n').find((candidate) => candidate.startsWith('{'));
        if (line && out.includes('\n')) resolve(JSON.parse(line));
      });
      child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${stderr}`)));
      child.once('error', (error) => reject(new Error(`${command}: ${error.message}`)));
    });
    return { child, info, stderr: () => stderr };
  }
  const startRole = (name, config) =>
    startChild(process.execPath, [self, '--role', name], {
      env: { ...process.env, BENCH_ROLE_CONFIG: JSON.stringify(config ?? {}) },
    });
  const stop = async (child) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(3000).then(() => child.kill('SIGKILL'))]);
  };
  const startCli = (args, extraEnv, nodeArgs) =>
    startKitCli({ self, dist, children }, args, extraEnv, nodeArgs);

  const services = await startRole('services').info;
  log(`services: http hello on :${services.http}, bulk sink/source on :${services.bulk}`);

  // Each scenario: setup() resolves to { httpPort, bulkPort, note, teardown }, or throws Skip.
  const scenarios = [];
  const skipped = [];
  if (wanted.has('direct'))
    scenarios.push({
      name: 'direct',
      async setup() {
        return {
          httpPort: services.http,
          bulkPort: services.bulk,
          note: 'client → service',
          teardown: async () => {},
        };
      },
    });
  // The product as installed: control plane, a separate edge (as a production edge runs), and one
  // agent per service, each binding its own labels, which a TCP edge's tunnel group selects.
  const edgewardProduct = {
    name: 'edgeward',
    async setup() {
      if (!existsSync(join(dist, 'cli.js'))) throw new Skip(`${dist}/cli.js not found (run npm run build)`);
      const data = mkdtempSync(join(dir, 'edgeward-'));
      const adminKey = `ewk_bench_${randomBytes(16).toString('hex')}`;
      const profile = cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] : [];
      const started = [];
      const teardown = async () => {
        for (const running of started.reverse()) await stop(running.child);
      };
      try {
        const server = startCli(['server', '--data-dir', data, '--port', '0', '--rate-limit', '0'], {
          EDGEWARD_ADMIN_API_KEY: adminKey,
        });
        started.push(server);
        const apiUrl = String((await server.logLine((line) => line.msg === 'edgeward server ready')).listen);
        const edgeKey = execFileSync(
          process.execPath,
          [join(dist, 'cli.js'), 'server', '--data-dir', data, '--print-edge-key'],
          { encoding: 'utf8' },
        ).trim();
        const edgeDir = join(data, 'edge');
        const edge = startCli(
          [
            'edge',
            '--api-url',
            apiUrl,
            '--data-dir',
            edgeDir,
            '--tunnel-addr',
            '127.0.0.1:0',
            '--tls-addr',
            'off',
            '--ssh-addr',
            'off',
            '--metrics-addr',
            'off',
            '--tcp-host',
            '127.0.0.1',
          ],
          { EDGEWARD_EDGE_KEY: edgeKey },
          profile,
        );
        started.push(edge);
        const ready = await edge.logLine((line) => line.msg === 'edgeward edge ready');
        const tunnelPort = Number(ready.tunnelPort);
        const api = apiClient(apiUrl, adminKey);
        const credential = await api('POST', '/credentials', { description: 'edgeward bench agents' });
        const ports = {};
        const agents = [];
        for (const [svc, servicePort] of [
          ['hello', services.http],
          ['bulk', services.bulk],
        ]) {
          const backend = await api('POST', '/backends/tunnel_group', { labels: { app: 'bench', svc } });
          const reserved = await reserveFreeAddr(api);
          await api('POST', '/edges/tcp', {
            description: `edgeward bench ${svc}`,
            hostports: [reserved.addr],
            backend: { backend_id: backend.id },
          });
          ports[svc] = reserved.port;
          const agent = startCli(
            [
              'agent',
              '--edge-addr',
              `127.0.0.1:${tunnelPort}`,
              '--edge-ca',
              join(edgeDir, 'tunnel.crt'),
              '--server-name',
              'localhost',
              '--label',
              'app=bench',
              '--label',
              `svc=${svc}`,
              '--forward',
              `tcp://127.0.0.1:${servicePort}`,
              '--no-exec-restart',
              '--no-update-check',
            ],
            { EDGEWARD_AUTHTOKEN: String(credential.token) },
            profile,
          );
          started.push(agent);
          agents.push(agent);
        }
        await Promise.all(
          agents.map((agent) => agent.logLine((line) => line.msg === 'session opened', 15_000)),
        );
        return {
          httpPort: ports.hello,
          bulkPort: ports.bulk,
          note: `edgeward server + edgeward edge + 2 × edgeward agent (${dist}/cli.js), TCP edges set up through the API; TLS 1.3 + HTTP/2${cpuProfDir ? `; CPU profiles in ${cpuProfDir}` : ''}`,
          pids: [edge, ...agents].map(({ child }) => child.pid),
          teardown,
        };
      } catch (error) {
        await teardown();
        throw error;
      }
    },
  };
  // The transport alone, assembled by hand from dist/ modules: no control plane, a plain TCP front.
  const transportScenario = (name, window) => ({
    name,
    async setup() {
      if (
        !existsSync(join(dist, 'edge/tunnel/tunnel-endpoint.js')) ||
        !existsSync(join(dist, 'agent/agent.js'))
      )
        throw new Skip('dist/ has no tunnel build (run npm run build)');
      const token = 'ewt_bench_token_0123456789abcdef';
      const edge = startRole('edge', {
        cert: pki.edgeCert,
        key: pki.edgeKey,
        token,
        targets: ['http', 'bulk'],
        h2Window: window,
      });
      const edgeInfo = await edge.info;
      const agent = startRole('agent', {
        edgeAddr: `127.0.0.1:${edgeInfo.tunnel}`,
        token,
        ca: pki.caCert,
        serverName: 'edge.bench',
        forward: { http: services.http, bulk: services.bulk },
        h2Window: window,
      });
      await withTimeout(agent.info, 15_000, 'the agents did not open their sessions');
      return {
        httpPort: edgeInfo.fronts.http,
        bulkPort: edgeInfo.fronts.bulk,
        note: `TunnelEndpoint + a plain TCP front, and Agent × 2, from dist/ modules in 2 processes (no control plane); TLS 1.3 + HTTP/2${window ? `, h2 windows ${window} B (patched)` : ''}`,
        pids: [edge.child.pid, agent.child.pid],
        teardown: async () => {
          await stop(agent.child);
          await stop(edge.child);
        },
      };
    },
  });
  if (wanted.has('edgeward')) scenarios.push(edgewardProduct);
  if (wanted.has('transport')) scenarios.push(transportScenario('edgeward transport only'));
  if (h2Window && (wanted.has('transport') || wanted.has('edgeward')))
    scenarios.push(transportScenario(`edgeward transport only h2win=${h2Window}`, h2Window));
  if (wanted.has('openssh'))
    scenarios.push({ name: 'OpenSSH -R', setup: () => setupOpenssh(dir, services, startChild, stop) });
  if (wanted.has('rathole')) {
    const { findOrBuildRathole } = await import(pathToFileURL(join(root, 'bench/tools/rathole.mjs')).href);
    const rathole = await findOrBuildRathole({ log });
    if (rathole.error) skipped.push({ scenario: 'rathole', reason: rathole.error });
    else {
      log(
        `rathole ${rathole.version} at ${rathole.bin} (features: ${rathole.features}${rathole.buildSeconds ? `, built in ${rathole.buildSeconds} s` : ''})`,
      );
      for (const transport of ratholeTransports) {
        if (!rathole.transports.includes(transport)) {
          skipped.push({
            scenario: `rathole ${transport}`,
            reason: `this rathole build has no ${transport} transport (features: ${rathole.features})`,
          });
          continue;
        }
        scenarios.push({
          name: `rathole ${transport}`,
          setup: () => setupRathole(dir, rathole, transport, pki, services, startChild, stop),
        });
      }
    }
  }

  const rows = [];
  for (const scenario of scenarios) {
    log(`── ${scenario.name}`);
    let setup;
    try {
      setup = await scenario.setup();
      await waitReady(setup.httpPort, setup.bulkPort);
    } catch (error) {
      if (setup) await setup.teardown();
      const reason = error instanceof Skip ? error.message : `setup failed: ${error.message}`;
      log(`skipped ${scenario.name}: ${reason}`);
      skipped.push({ scenario: scenario.name, reason });
      continue;
    }
    try {
      const url = `http://127.0.0.1:${setup.httpPort}/`;
      if (warmup > 0) await autocannon({ url, connections, duration: warmup });
      const cpu = () => treeCpuSeconds(setup.pids);
      const cpuBeforeLoad = cpu();
      const load = await autocannon({ url, connections, duration: seconds });
      const cpuLoad = cpuBeforeLoad === undefined ? undefined : cpu() - cpuBeforeLoad;
      const cpuPerRequest =
        cpuLoad === undefined || !load.requests.total
          ? '—'
          : Math.round((cpuLoad / load.requests.total) * 1e6);
      log(
        `  http: ${Math.round(load.requests.average)} req/s, p50 ${load.latency.p50} ms, p99 ${load.latency.p99} ms${cpuLoad === undefined ? '' : `, tunnel CPU ${cpuLoad.toFixed(1)} s (${cpuPerRequest} µs/req)`}`,
      );
      const bytes = mib * 1024 * 1024;
      // A transfer that fails (e.g. a download cut short) is tried again, up to `tries` times; every
      // failure is listed in the integrity column, and a cell with no clean try shows the error.
      const failures = [];
      let attempts = 0;
      const measure = async (label, mode, count) => {
        let result;
        for (let attempt = 1; attempt <= tries; attempt++) {
          attempts++;
          result = await transfer(setup.bulkPort, mode, bytes, count, transferTimeoutMs);
          log(`  ${label}: ${fmtRate(result)}${tries > 1 ? ` [try ${attempt}]` : ''}`);
          if (result.rate !== undefined) break;
          failures.push(`${label} try ${attempt}: ${result.error}`);
        }
        return result;
      };
      const cpuBeforeBulk = cpu();
      const up1 = await measure('upload 1 conn', 'U', 1);
      const upN = await measure(`upload ${parallel} conns`, 'U', parallel);
      const down1 = await measure('download 1 conn', 'D', 1);
      // Per GiB offered: a failed try counts as moved (it is rare, and it is listed).
      const cpuBulk = cpuBeforeBulk === undefined ? undefined : cpu() - cpuBeforeBulk;
      const cpuPerGib =
        cpuBulk === undefined ? '—' : Number((cpuBulk / ((attempts * mib) / 1024)).toFixed(2));
      if (cpuBulk !== undefined) log(`  bulk: tunnel CPU ${cpuBulk.toFixed(1)} s (${cpuPerGib} s/GiB)`);
      const bulkFailures = failures.length;
      // Short downloads: when the service has sent everything and closed, every byte must still arrive.
      let short = 0;
      for (let index = 1; index <= smallDownloads; index++) {
        const size = 1024 * 1024 + Math.floor(Math.random() * 3 * 1024 * 1024);
        const result = await transfer(setup.bulkPort, 'D', size, 1, 10_000);
        if (result.rate !== undefined) continue;
        short++;
        failures.push(`small download ${index} (${size} B): ${result.error}`);
      }
      if (smallDownloads > 0) log(`  small downloads: ${short} of ${smallDownloads} short`);
      rows.push({
        scenario: scenario.name,
        'req/s': Math.round(load.requests.average),
        'p50 ms': load.latency.p50,
        'p99 ms': load.latency.p99,
        'MiB/s up 1': up1.rate ?? up1.error,
        [`MiB/s up ${parallel}`]: upN.rate ?? upN.error,
        'MiB/s down 1': down1.rate ?? down1.error,
        'cpu µs/req': cpuPerRequest,
        'cpu s/GiB': cpuPerGib,
        'http errors': load.errors + load.timeouts + load.non2xx,
        integrity: `${attempts - bulkFailures}/${attempts} complete${smallDownloads > 0 ? `, ${short}/${smallDownloads} short` : ''}`,
        failures,
        path: setup.note,
      });
    } finally {
      await setup.teardown();
    }
  }
  for (const child of children) if (child !== undefined) await stop(child);

  console.log(
    `\nedgeward tunnel bench — ${new Date().toISOString()}, node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim()} (shared), loopback only`,
  );
  console.log(
    `HTTP: autocannon ${connections} connections × ${seconds} s (after ${warmup} s warm-up) against a node:http hello-world; latency has 1 ms resolution.`,
  );
  console.log(
    `TCP: ${mib} MiB through 1 connection (up = to a sink that acks the last byte; down = from a source), and ${mib} MiB in total over ${parallel} parallel connections (up).\n`,
  );
  console.table(rows.map(({ path: _path, failures: _failures, ...row }) => row));
  for (const row of rows) {
    console.log(`  ${row.scenario}: ${row.path}`);
    for (const failure of row.failures) console.log(`    FAILED ${failure}`);
  }
  for (const { scenario, reason } of skipped) console.log(`  SKIPPED ${scenario}: ${reason}`);

  const ours = rows.filter((row) => row.scenario.startsWith('edgeward'));
  const baselines = rows.filter((row) => !row.scenario.startsWith('edgeward'));
  if (ours.length > 0 && baselines.length > 0) {
    const ratio = (a, b) =>
      typeof a === 'number' && typeof b === 'number' && b > 0 ? Number((a / b).toFixed(2)) : '—';
    const up = `MiB/s up ${parallel}`;
    const ratios = ours.flatMap((edgeward) =>
      baselines.map((base) => ({
        ratio: `${edgeward.scenario} ÷ ${base.scenario}`,
        'req/s': ratio(edgeward['req/s'], base['req/s']),
        'p99 (lower is better)': ratio(edgeward['p99 ms'], base['p99 ms']),
        'MiB/s up 1': ratio(edgeward['MiB/s up 1'], base['MiB/s up 1']),
        [up]: ratio(edgeward[up], base[up]),
        'MiB/s down 1': ratio(edgeward['MiB/s down 1'], base['MiB/s down 1']),
        'cpu s/GiB (lower is better)': ratio(edgeward['cpu s/GiB'], base['cpu s/GiB']),
      })),
    );
    console.log(
      '\nRatios, edgeward ÷ baseline (req/s and MiB/s: above 1 means edgeward is faster; p99: below 1 means edgeward is faster):',
    );
    console.table(ratios);
  }
  const elapsed = (Date.now() - started) / 1000;
  const busy = machineBusySeconds();
  const benchCpu = treeCpuSeconds([process.pid]);
  const others =
    busy === undefined || busyBefore === undefined || benchCpu === undefined || benchCpuBefore === undefined
      ? ''
      : `; other processes on this machine used ${((busy - busyBefore - (benchCpu - benchCpuBefore)) / elapsed).toFixed(2)} cores on average meanwhile (the bench ${((benchCpu - benchCpuBefore) / elapsed).toFixed(2)})`;
  console.log(
    `total bench time: ${Math.round(elapsed)} s; load average (1/5/15 min) before ${loadBefore}, after ${loadAverage()}${others}`,
  );
  process.exit(0);
}

function withTimeout(promise, ms, message) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function fmtRate(result) {
  return result.rate === undefined
    ? `FAILED (${result.error})`
    : `${result.rate} MiB/s (${result.seconds} s)`;
}

/**
 * A reserved address (`us.tcp.edgeward.dev:PORT`, the port drawn at random by the API) whose port
 * nothing on this machine holds, so the edge can listen on it; `{ addr, port }`.
 */
async function reserveFreeAddr(api) {
  const taken = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    const reserved = await api('POST', '/reserved_addrs', { description: 'edgeward bench' });
    const port = Number(String(reserved.addr).slice(String(reserved.addr).lastIndexOf(':') + 1));
    if (await portFree(port)) return { addr: reserved.addr, port };
    taken.push(port);
  }
  throw new Error(`the reserved addresses' ports ${taken.join(', ')} are all in use here`);
}

function portFree(port) {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** One bulk connection: 'U' pushes `bytes` and waits for the sink's ack; 'D' reads `bytes`. */
function bulkConnection(port, mode, bytes, block) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
    let received = 0;
    let done = false;
    const finish = (error) => {
      if (done) return;
      done = true;
      socket.destroy();
      if (error) reject(error);
      else resolve();
    };
    socket.on('error', finish);
    socket.on('close', () =>
      finish(
        mode === 'D'
          ? new Error(`truncated: closed ${bytes - received} B short of ${bytes} B`)
          : new Error(`closed before the sink's ack`),
      ),
    );
    socket.on('data', (chunk) => {
      received += chunk.length;
      if (mode === 'U' ? chunk.includes(0x4b /* K */) : received >= bytes) finish();
    });
    const header = Buffer.alloc(9);
    header[0] = mode.charCodeAt(0);
    header.writeBigUInt64BE(BigInt(bytes), 1);
    socket.write(header);
    if (mode === 'U') sendBytes(socket, bytes, block).catch(() => {});
  });
}

/** Moves `bytes` in total over `count` parallel connections; resolves { rate (MiB/s), seconds } or { error }. */
async function transfer(port, mode, bytes, count, timeoutMs) {
  const block = Buffer.alloc(256 * 1024, 0x5a);
  const each = Math.floor(bytes / count);
  const start = process.hrtime.bigint();
  try {
    await withTimeout(
      Promise.all(Array.from({ length: count }, () => bulkConnection(port, mode, each, block))),
      timeoutMs,
      `timeout after ${timeoutMs / 1000} s`,
    );
  } catch (error) {
    return { error: error.message };
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { rate: Math.round((each * count) / 1024 / 1024 / seconds), seconds: Number(seconds.toFixed(2)) };
}

/** Waits until both forwarded ports carry traffic end to end (a GET, and a 1 KiB download). */
async function waitReady(httpPort, bulkPort, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`http://127.0.0.1:${httpPort}/`, { signal: AbortSignal.timeout(2000) });
      if (response.status === 200 && (await response.text()) === 'hello world\n') {
        const probe = await transfer(bulkPort, 'D', 1024, 1, 2000);
        if (probe.rate !== undefined) return;
        last = new Error(probe.error);
      }
    } catch (error) {
      last = error;
    }
    await sleep(100);
  }
  throw new Error(`the forwarded ports did not carry traffic within ${timeoutMs / 1000} s: ${last?.message}`);
}

/** A CA and an edge certificate (EC P-256, SAN edge.bench) for edgeward and rathole's tls transport. */
function makePki(dir) {
  const file = (name) => join(dir, name);
  const openssl = (...args) =>
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-subj',
    '/CN=edgeward bench CA',
    '-days',
    '2',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl('req', ...ec, '-keyout', file('edge.key'), '-out', file('edge.csr'), '-subj', '/CN=edge.bench');
  writeFileSync(
    file('edge.ext'),
    'basicConstraints=CA:FALSE\nsubjectAltName=DNS:edge.bench\nextendedKeyUsage=serverAuth\n',
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('edge.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('edge.pem'),
    '-days',
    '2',
    '-extfile',
    file('edge.ext'),
  );
  openssl(
    'pkcs12',
    '-export',
    '-out',
    file('edge.pfx'),
    '-inkey',
    file('edge.key'),
    '-in',
    file('edge.pem'),
    '-passout',
    'pass:bench',
  );
  return {
    caCert: file('ca.pem'),
    edgeCert: file('edge.pem'),
    edgeKey: file('edge.key'),
    pfx: file('edge.pfx'),
    pfxPassword: 'bench',
  };
}

/** sshd on a high loopback port with its own config, host key and authorized_keys; `ssh -R` for both targets. */
async function setupOpenssh(dir, services, startChild, stop) {
  const sshd = '/usr/sbin/sshd';
  if (!existsSync(sshd))
    throw new Skip(`${sshd} not found — install it with: apt-get install -y openssh-server`);
  if (spawnSync('sh', ['-c', 'command -v ssh && command -v ssh-keygen']).status !== 0)
    throw new Skip('ssh / ssh-keygen not found — install openssh-client');
  const ssh = join(dir, 'ssh');
  mkdirSync(ssh, { recursive: true });
  const file = (name) => join(ssh, name);
  for (const key of ['host_key', 'client_key'])
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', file(key)], { stdio: 'ignore' });
  writeFileSync(file('authorized_keys'), readFileSync(file('client_key.pub')));
  // Privilege separation needs this directory even for an sshd of our own.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const port = await freePort();
  writeFileSync(
    file('sshd_config'),
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${file('host_key')}`,
      `PidFile ${file('sshd.pid')}`,
      `AuthorizedKeysFile ${file('authorized_keys')}`,
      'PermitRootLogin prohibit-password',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'AllowTcpForwarding remote',
      'GatewayPorts no',
      'X11Forwarding no',
      'PrintMotd no',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  const daemon = startChild(sshd, ['-D', '-e', '-f', file('sshd_config')]);
  daemon.info.catch(() => {});
  await waitListening(port, 5000).catch((error) => {
    throw new Error(`sshd did not listen: ${error.message} ${daemon.stderr()}`);
  });
  const httpFront = await freePort();
  const bulkFront = await freePort();
  const cipher = process.env.BENCH_SSH_CIPHER;
  const user = userInfo().username;
  const client = startChild('ssh', [
    '-F',
    '/dev/null',
    '-N',
    '-T',
    '-i',
    file('client_key'),
    '-p',
    String(port),
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'BatchMode=yes',
    '-o',
    'ExitOnForwardFailure=yes',
    '-o',
    'LogLevel=ERROR',
    ...(cipher ? ['-c', cipher] : []),
    '-R',
    `127.0.0.1:${httpFront}:127.0.0.1:${services.http}`,
    '-R',
    `127.0.0.1:${bulkFront}:127.0.0.1:${services.bulk}`,
    `${user}@127.0.0.1`,
  ]);
  client.info.catch(() => {});
  const chosen = cipher ?? firstSshCipher();
  return {
    httpPort: httpFront,
    bulkPort: bulkFront,
    note: `${sshVersion()}, cipher ${chosen}; sshd and ssh are separate processes (sshd forks one per session)`,
    pids: [daemon.child.pid, client.child.pid],
    teardown: async () => {
      await stop(client.child);
      await stop(daemon.child);
    },
  };
}

function sshVersion() {
  const out = spawnSync('ssh', ['-V'], { encoding: 'utf8' });
  return (out.stderr || out.stdout).trim().split(',')[0];
}

function firstSshCipher() {
  const out = spawnSync('ssh', ['-F', '/dev/null', '-G', '127.0.0.1'], { encoding: 'utf8' }).stdout ?? '';
  const line = out.split('\n').find((candidate) => candidate.startsWith('ciphers '));
  return line ? `${line.slice('ciphers '.length).split(',')[0]} (default)` : 'default';
}

/** `rathole server.toml` and `rathole client.toml` with one service per target, over `transport`. */
async function setupRathole(dir, rathole, transport, pki, services, startChild, stop) {
  const work = join(dir, `rathole-${transport}`);
  mkdirSync(work, { recursive: true });
  const controlPort = await freePort();
  const fronts = { http: await freePort(), bulk: await freePort() };
  let serverTransport = `[server.transport]\ntype = "${transport}"\n`;
  let clientTransport = `[client.transport]\ntype = "${transport}"\n`;
  if (transport === 'tls') {
    serverTransport += `[server.transport.tls]\npkcs12 = "${pki.pfx}"\npkcs12_password = "${pki.pfxPassword}"\n`;
    clientTransport += `[client.transport.tls]\ntrusted_root = "${pki.caCert}"\nhostname = "edge.bench"\n`;
  } else if (transport === 'noise') {
    const keys = execFileSync(rathole.bin, ['--genkey'], { encoding: 'utf8' });
    const [, privateKey, publicKey] = /Private Key:\s*(\S+)\s*Public Key:\s*(\S+)/.exec(keys) ?? [];
    if (!privateKey) throw new Error(`rathole --genkey printed no keys: ${keys}`);
    serverTransport += `[server.transport.noise]\nlocal_private_key = "${privateKey}"\n`;
    clientTransport += `[client.transport.noise]\nremote_public_key = "${publicKey}"\n`;
  }
  const server = [`[server]\nbind_addr = "127.0.0.1:${controlPort}"\n`, serverTransport];
  const client = [`[client]\nremote_addr = "127.0.0.1:${controlPort}"\n`, clientTransport];
  for (const [name, port] of Object.entries(fronts)) {
    server.push(
      `[server.services.${name}]\ntoken = "bench-${name}-token"\nbind_addr = "127.0.0.1:${port}"\n`,
    );
    client.push(
      `[client.services.${name}]\ntoken = "bench-${name}-token"\nlocal_addr = "127.0.0.1:${services[name]}"\n`,
    );
  }
  writeFileSync(join(work, 'server.toml'), server.join('\n'));
  writeFileSync(join(work, 'client.toml'), client.join('\n'));
  const quiet = { env: { ...process.env, RUST_LOG: 'error' }, cwd: work };
  const serverProcess = startChild(rathole.bin, ['--server', join(work, 'server.toml')], quiet);
  serverProcess.info.catch(() => {});
  await waitListening(controlPort, 5000);
  const clientProcess = startChild(rathole.bin, ['--client', join(work, 'client.toml')], quiet);
  clientProcess.info.catch(() => {});
  return {
    httpPort: fronts.http,
    bulkPort: fronts.bulk,
    note: `rathole ${rathole.version}, ${transport} transport${transport === 'tls' ? ' (native-tls/OpenSSL)' : transport === 'noise' ? ' (Noise_NK_25519_ChaChaPoly_BLAKE2s)' : ' (plaintext)'}, one transport connection per carried connection`,
    pids: [serverProcess.child.pid, clientProcess.child.pid],
    teardown: async () => {
      await stop(clientProcess.child);
      await stop(serverProcess.child);
    },
  };
}

/** A baseline whose tool is missing: printed with its reason, never a made-up figure. */
class Skip extends Error {}

if (role === 'guard') runGuard(process.argv);
else if (role === 'services') await runServices();
else if (role === 'edge') await runEdge(JSON.parse(process.env.BENCH_ROLE_CONFIG));
else if (role === 'agent') await runAgent(JSON.parse(process.env.BENCH_ROLE_CONFIG));
else await main();
