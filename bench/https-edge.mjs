// HTTPS edge benchmark: HTTP/1.1 req/s and latency through edgeward's HTTPS edge (TLS terminated at
// the edge, carried by `edgeward agent` to a local HTTP service), next to the same service directly
// (HTTP and HTTPS) and behind rathole (carrying the service's own TLS), all on 127.0.0.1 in one run
// so the ratios are fair. Every run is bounded.
//   node bench/https-edge.mjs
// Scenarios (BENCH_SCENARIOS, comma separated):
//   direct      client → service, plain HTTP
//   tls         client → the same service on node:https (the fair baseline for an HTTPS edge)
//   edgeward    client → `edgeward edge`'s TLS listener (HTTPS edge edge.bench, route `/` with a
//               backend only) → TLS 1.3 + HTTP/2 tunnel → `edgeward agent` → service (HTTP); the
//               product as installed: `edgeward server`, a separate `edgeward edge`, `edgeward
//               agent`, all from dist/cli.js and configured through the HTTP API
//   modules     the same processes, HTTPS edge modules.edge.bench, whose route `/` also has
//               ip_restriction (a policy with allow rules 0.0.0.0/0 and ::/0), request_headers,
//               response_headers and compression; the edgeward and modules rows alternate
//               (A B B A …, BENCH_ROUNDS times each) so the module cost is measured pairwise
//   gzip        `modules` again with `Accept-Encoding: gzip` (only for bodies the edge compresses,
//               i.e. 16k: the small body is under compression's 1024-byte minimum)
//   rathole     client → rathole server → rathole client → the service on node:https (TLS end to
//               end, terminated at the service), per transport in BENCH_RATHOLE_TRANSPORTS
// Env knobs (defaults in brackets):
//   BENCH_SECONDS [10]           autocannon duration per row; BENCH_WARMUP_SECONDS [2] before it
//   BENCH_CONNECTIONS [32]       autocannon connections (HTTP/1.1 keep-alive, no pipelining)
//   BENCH_BODIES [small,16k]     response bodies: `small` = 12 B "hello world\n", `16k` = 16 KiB text
//   BENCH_SCENARIOS [direct,tls,edgeward,modules,gzip,rathole]
//   BENCH_RATHOLE_TRANSPORTS [tls,tcp]   rathole transports (tls: two layers of encryption, as
//                                edgeward's client TLS + tunnel TLS; tcp: the service's TLS only)
//   BENCH_ROUNDS [2]             the edgeward and edgeward modules rows alternate this many times each
//   BENCH_CPU_PROF               a directory: the edgeward edge and agent run with `node --cpu-prof`
//                                (DIR/edge, DIR/agent); their hotspots are printed at the end (the
//                                profiles cover every edgeward row: narrow with BENCH_SCENARIOS)
//   BENCH_BUILD [1]              0 skips `npm run build` (the bench runs edgeward from dist/)
//   BENCH_DIST [dist/]           run edgeward from another build (keep it inside the repository)
//   RATHOLE_BIN, RATHOLE_VERSION, RATHOLE_FEATURES: see bench/tools/rathole.mjs
// Processes: the load generator (autocannon) is this process; the services (node:http and
// node:https, same handler) run in a child process of their own; so do the edgeward server, edge
// and agent (each under a small `--role guard` parent that stops it when this process goes), and
// rathole's server and client.
// The `cpu µs/req` column is the CPU time (user + system, from /proc) of the carrying processes per
// request (edge + agent; rathole server + client); `svc µs/req` is the service process's, and
// `svc conns/req` the TCP connections the service accepted per request (about 0 with keep-alive).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';
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
const dist = process.env.BENCH_DIST ?? join(root, 'dist');
const self = fileURLToPath(import.meta.url);
const roleIndex = process.argv.indexOf('--role');
const role = roleIndex === -1 ? 'main' : process.argv[roleIndex + 1];

/** The public host names: the plain HTTPS edge's (also the Host/SNI of every other row), the modules edge's. */
const HOST = 'edge.bench';
const MODULES_HOST = 'modules.edge.bench';
const SMALL_BODY = 'hello world\n';
/** Header the request_headers module adds; the service reflects it so the bench can check it. */
const ADDED_REQUEST_HEADER = 'x-bench-edge';
const ADDED_RESPONSE_HEADER = 'x-bench-edge-response';

/** 16 KiB of deterministic English-like text (compresses about as well as real text, ~3:1). */
function textBody(bytes) {
  const words =
    'the edge carries each request over a tunnel to an agent which forwards it to the local service and streams the answer back while modules may change headers compress bodies or refuse clients by address policy route backend session stream window frame record certificate handshake latency throughput'.split(
      ' ',
    );
  let seed = 42;
  const next = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed;
  };
  let text = '';
  let line = '';
  while (text.length < bytes) {
    const word = words[next() % words.length];
    if (line.length + word.length + 1 > 72) {
      text += `${line}\n`;
      line = '';
    }
    line += line ? ` ${word}` : word;
  }
  return `${text.slice(0, bytes - 1)}\n`;
}
const BODIES = { small: SMALL_BODY, '16k': textBody(16 * 1024) };
const PATHS = { small: '/', '16k': '/16k' };

// ---------------------------------------------------------------------------------------------
// Child roles
// ---------------------------------------------------------------------------------------------

/**
 * `--role guard -- COMMAND ARGS…`: runs COMMAND with this process's stdout and stderr, and stops it
 * when the bench goes (stdin closing, even after a kill -9) or on SIGTERM. Exits with COMMAND's code.
 */
function runGuard(argv) {
  const [command, ...args] = argv.slice(argv.indexOf('--') + 1);
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  let stopping = false;
  const stopChild = () => {
    if (stopping) return;
    stopping = true;
    child.kill('SIGTERM');
    // Long enough for a --cpu-prof process to drain and write its profile.
    setTimeout(() => child.kill('SIGKILL'), 8000).unref();
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

/**
 * The service behind every path: one handler on node:http and on node:https (the bench
 * certificate). `/16k` answers 16 KiB of text, anything else "hello world\n". A request carrying
 * the header request_headers adds gets it reflected in `x-bench-seen`.
 */
async function runServices(config) {
  exitWithParent();
  const bodies = {
    small: Buffer.from(SMALL_BODY),
    '16k': Buffer.from(BODIES['16k']),
  };
  const handler = (request, response) => {
    const body = request.url === PATHS['16k'] ? bodies['16k'] : bodies.small;
    const headers = { 'content-type': 'text/plain; charset=utf-8', 'content-length': body.length };
    const seen = request.headers[ADDED_REQUEST_HEADER];
    if (seen !== undefined) headers['x-bench-seen'] = seen;
    response.writeHead(200, headers);
    response.end(body);
  };
  const plain = http.createServer({ keepAliveTimeout: 60_000 }, handler);
  const secure = https.createServer(
    { keepAliveTimeout: 60_000, cert: readFileSync(config.cert), key: readFileSync(config.key) },
    handler,
  );
  // Connections accepted, for the `svc conns/req` column: a proxy that keeps its upstream
  // connections alive opens almost none per request, one that does not opens one per request.
  let connections = 0;
  plain.on('connection', () => connections++);
  secure.on('connection', () => connections++);
  process.on('message', () => process.send({ connections }));
  plain.listen(0, '127.0.0.1');
  secure.listen(0, '127.0.0.1');
  await Promise.all([once(plain, 'listening'), once(secure, 'listening')]);
  process.stdout.write(`${JSON.stringify({ http: plain.address().port, https: secure.address().port })}\n`);
}

// ---------------------------------------------------------------------------------------------
// The load generator and the scenarios
// ---------------------------------------------------------------------------------------------

async function main() {
  const seconds = Number(env('BENCH_SECONDS', 10));
  const warmup = Number(env('BENCH_WARMUP_SECONDS', 2));
  const connections = Number(env('BENCH_CONNECTIONS', 32));
  const bodies = env('BENCH_BODIES', 'small,16k')
    .split(',')
    .filter((body) => {
      if (BODIES[body] !== undefined) return true;
      throw new Error(`BENCH_BODIES: unknown body ${body} (small, 16k)`);
    });
  const wanted = new Set(env('BENCH_SCENARIOS', 'direct,tls,edgeward,modules,gzip,rathole').split(','));
  const ratholeTransports = env('BENCH_RATHOLE_TRANSPORTS', 'tls,tcp').split(',');
  const cpuProfDir = process.env.BENCH_CPU_PROF || undefined;
  const rounds = Math.max(1, Number(env('BENCH_ROUNDS', 2)));
  const { default: autocannon } = await import('autocannon');

  const children = [];
  const killAll = () => {
    for (const child of children.splice(0).reverse()) if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

  const log = (line) => console.error(`[bench] ${line}`);
  const started = Date.now();
  const loadAverage = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
  const loadBefore = loadAverage();
  const busyBefore = machineBusySeconds();
  const benchCpuBefore = treeCpuSeconds([process.pid]);

  const edgewardWanted = ['edgeward', 'modules', 'gzip'].some((name) => wanted.has(name));
  if (env('BENCH_BUILD', '1') !== '0' && edgewardWanted) {
    log('npm run build (BENCH_BUILD=0 skips)');
    const build = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
    if (build.status !== 0)
      log(`npm run build failed; using dist/ as it is:\n${(build.stdout + build.stderr).slice(-1500)}`);
  }

  const dir = mkdtempSync(join(tmpdir(), 'edgeward-https-bench-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const pki = makePki(dir);

  /** Starts a child, resolves `info` with the first JSON line it prints. */
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
  const stop = async (child) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
  };
  const startCli = (args, extraEnv, nodeArgs) =>
    startKitCli({ self, dist, children }, args, extraEnv, nodeArgs);

  const servicesProcess = startChild(process.execPath, [self, '--role', 'services'], {
    stdio: ['pipe', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env, BENCH_ROLE_CONFIG: JSON.stringify({ cert: pki.edgeCert, key: pki.edgeKey }) },
  });
  const services = await servicesProcess.info;
  log(`services: http on :${services.http}, https on :${services.https}`);
  const serviceConnections = async () => {
    const answer = once(servicesProcess.child, 'message');
    servicesProcess.child.send('count');
    return (await answer)[0].connections;
  };

  /**
   * The product as installed: control plane, a separate edge with its TLS listener, one agent
   * forwarding to the service. Two HTTPS edges on that edge, both to the same backend (the agent's
   * labels): HOST, whose route `/` has a backend only, and MODULES_HOST, whose route `/` also has
   * ip_restriction, request_headers, response_headers and compression. The bench certificate
   * (covering both names) is uploaded, so the edge serves the same EC P-256 certificate as the
   * direct TLS row.
   */
  const edgewardSetup = async () => {
    if (!existsSync(join(dist, 'cli.js'))) throw new Skip(`${dist}/cli.js not found (run npm run build)`);
    if (!existsSync(join(dist, 'edge/https/https-front.js')))
      throw new Skip(`${dist} has no HTTPS edge (edge/https/https-front.js); run npm run build`);
    const data = mkdtempSync(join(dir, 'edgeward-'));
    const adminKey = `ewk_bench_${randomBytes(16).toString('hex')}`;
    const profile = (name) => (cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', join(cpuProfDir, name)] : []);
    const started = [];
    // The edge first, then the agent, then the control plane. With the agent stopped first, the
    // edge often outlived its --drain-timeout by far (it was killed 8 s after SIGTERM, losing its
    // CPU profile); see bench/README.md.
    const stopOrder = () => {
      const [server, edge, agent] = started;
      return [edge, agent, server].filter((running) => running !== undefined);
    };
    const teardown = async () => {
      for (const running of stopOrder()) {
        const since = Date.now();
        await stop(running.child);
        // The guard exits 128 when its process was killed: a --cpu-prof process then wrote nothing.
        if (running.child.exitCode !== 0)
          log(
            `edgeward ${running.name}: exit ${running.child.exitCode ?? running.child.signalCode} ${Date.now() - since} ms after SIGTERM; last output:\n${running.output().slice(-1500)}`,
          );
      }
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
          '127.0.0.1:0',
          '--ssh-addr',
          'off',
          '--metrics-addr',
          'off',
          '--tcp-host',
          '127.0.0.1',
          '--drain-timeout',
          '1',
        ],
        { EDGEWARD_EDGE_KEY: edgeKey },
        profile('edge'),
      );
      started.push(edge);
      const ready = await edge.logLine((line) => line.msg === 'edgeward edge ready');
      const tunnelPort = Number(ready.tunnelPort);
      const tlsPort = Number(ready.tlsPort);
      if (!tlsPort) throw new Error(`the edge opened no TLS listener: ${JSON.stringify(ready)}`);
      const api = apiClient(apiUrl, adminKey);
      await api('POST', '/tls_certificates', {
        description: 'edgeward bench',
        certificate_pem: readFileSync(pki.edgeCert, 'utf8'),
        private_key_pem: readFileSync(pki.edgeKey, 'utf8'),
      });
      const credential = await api('POST', '/credentials', { description: 'edgeward bench agent' });
      const labels = { app: 'bench-https' };
      const backend = await api('POST', '/backends/tunnel_group', { labels });
      const policy = await api('POST', '/ip_policies', { description: 'edgeward bench: allow all' });
      for (const cidr of ['0.0.0.0/0', '::/0'])
        await api('POST', '/ip_policy_rules', { ip_policy_id: policy.id, cidr, action: 'allow' });
      const modules = {
        ip_restriction: { ip_policy_ids: [policy.id] },
        request_headers: { add: { [ADDED_REQUEST_HEADER]: 'edgeward' }, remove: ['x-bench-drop'] },
        response_headers: { add: { [ADDED_RESPONSE_HEADER]: '1' }, remove: ['x-powered-by'] },
        compression: {},
      };
      for (const [host, routeModules] of [
        [HOST, {}],
        [MODULES_HOST, modules],
      ]) {
        const httpsEdge = await api('POST', '/edges/https', {
          description: `edgeward bench ${host}`,
          hostports: [`${host}:443`],
        });
        await api('POST', `/edges/https/${httpsEdge.id}/routes`, {
          description: `edgeward bench ${host}`,
          match_type: 'path_prefix',
          match: '/',
          backend: { backend_id: backend.id },
          ...routeModules,
        });
      }
      const agent = startCli(
        [
          'agent',
          '--edge-addr',
          `127.0.0.1:${tunnelPort}`,
          '--edge-ca',
          join(edgeDir, 'tunnel.crt'),
          '--server-name',
          'localhost',
          ...Object.entries(labels).flatMap(([key, value]) => ['--label', `${key}=${value}`]),
          '--forward',
          `http://127.0.0.1:${services.http}`,
          '--no-exec-restart',
          '--no-update-check',
        ],
        { EDGEWARD_AUTHTOKEN: String(credential.token) },
        profile('agent'),
      );
      started.push(agent);
      await agent.logLine((line) => line.msg === 'session opened', 15_000);
      return {
        protocol: 'https',
        port: tlsPort,
        note: `edgeward server + edgeward edge (TLS listener; HTTPS edge ${HOST}: route / with a backend only; HTTPS edge ${MODULES_HOST}: route / with ip_restriction (allow 0.0.0.0/0, ::/0), request_headers, response_headers, compression) + edgeward agent --forward http://… (${dist}/cli.js); tunnel TLS 1.3 + HTTP/2${cpuProfDir ? `; CPU profiles in ${cpuProfDir}` : ''}`,
        pids: [edge.child.pid, agent.child.pid],
        profileDir: cpuProfDir,
        teardown,
      };
    } catch (error) {
      await teardown();
      throw error;
    }
  };

  // Each scenario: setup() resolves to { protocol, port, note, pids, teardown }, or throws Skip.
  const scenarios = [];
  const skipped = [];
  const noTeardown = async () => {};
  if (wanted.has('direct'))
    scenarios.push({
      name: 'direct http',
      setup: async () => ({
        protocol: 'http',
        port: services.http,
        note: 'client → service (node:http)',
        pids: [],
        teardown: noTeardown,
      }),
    });
  if (wanted.has('tls'))
    scenarios.push({
      name: 'direct tls',
      setup: async () => ({
        protocol: 'https',
        port: services.https,
        note: 'client → service (node:https, TLS 1.3, EC P-256 certificate)',
        pids: [],
        teardown: noTeardown,
      }),
    });
  if (edgewardWanted)
    scenarios.push({
      name: 'edgeward',
      setup: edgewardSetup,
      // The plain and the modules route alternate (A B, then B A), `rounds` times each, on the same
      // processes, so that a change in the machine's load or the JIT's luck falls on both; then
      // the gzip row.
      variants(body) {
        const list = [];
        for (let round = 1; round <= rounds; round++) {
          const pair = [];
          if (wanted.has('edgeward')) pair.push({ name: 'edgeward', host: HOST, round });
          if (wanted.has('modules'))
            pair.push({ name: 'edgeward modules', host: MODULES_HOST, modules: true, round });
          // A B B A …: neither row always runs second (on a heap that has grown, or a busier machine).
          list.push(...(round % 2 === 0 ? pair.reverse() : pair));
        }
        // The small body is under compression's minimum length: a gzip row would repeat the modules one.
        if (wanted.has('gzip') && body !== 'small')
          list.push({
            name: 'edgeward modules + gzip',
            host: MODULES_HOST,
            modules: true,
            acceptEncoding: 'gzip',
          });
        return list;
      },
    });
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
          setup: () => setupRathole(dir, rathole, transport, pki, services.https, startChild, stop),
        });
      }
    }
  }

  const rows = [];
  const profiles = [];
  for (const scenario of scenarios) {
    log(`── ${scenario.name}`);
    const variantsOf = (body) => scenario.variants?.(body) ?? [{ name: scenario.name, host: HOST }];
    let setup;
    try {
      setup = await scenario.setup();
      await waitReady(
        setup,
        bodies.flatMap((body) => variantsOf(body).map((variant) => ({ body, variant }))),
      );
    } catch (error) {
      if (setup) await setup.teardown();
      const reason = error instanceof Skip ? error.message : `setup failed: ${error.message}`;
      log(`skipped ${scenario.name}: ${reason}`);
      skipped.push({ scenario: scenario.name, reason });
      continue;
    }
    try {
      for (const body of bodies) {
        for (const variant of variantsOf(body)) {
          const checked = await probe(setup, body, variant);
          const options = {
            url: `${setup.protocol}://127.0.0.1:${setup.port}${PATHS[body]}`,
            connections,
            headers: {
              host: variant.host,
              ...(variant.acceptEncoding && { 'accept-encoding': variant.acceptEncoding }),
            },
            ...(setup.protocol === 'https' && { servername: variant.host }),
          };
          if (warmup > 0) await autocannon({ ...options, duration: warmup });
          const tunnelCpu = () => treeCpuSeconds(setup.pids);
          const serviceCpu = () => treeCpuSeconds([servicesProcess.child.pid]);
          const before = { tunnel: tunnelCpu(), service: serviceCpu(), conns: await serviceConnections() };
          const load = await autocannon({ ...options, duration: seconds });
          const serviceConns = (await serviceConnections()) - before.conns;
          const perRequest = (now, then) =>
            now === undefined || then === undefined || !load.requests.total
              ? '—'
              : Math.round(((now - then) / load.requests.total) * 1e6);
          const cpuPerRequest = setup.pids.length ? perRequest(tunnelCpu(), before.tunnel) : '—';
          const servicePerRequest = perRequest(serviceCpu(), before.service);
          const row = {
            scenario: variant.name,
            body,
            round: variant.round ?? 1,
            'req/s': Math.round(load.requests.average),
            'p50 ms': load.latency.p50,
            'p99 ms': load.latency.p99,
            'MiB/s': Number((load.throughput.average / 1024 / 1024).toFixed(1)),
            'cpu µs/req': cpuPerRequest,
            'svc µs/req': servicePerRequest,
            'svc conns/req': load.requests.total
              ? Number((serviceConns / load.requests.total).toFixed(3))
              : '—',
            errors: load.errors + load.timeouts + load.non2xx,
            check: checked,
          };
          log(
            `  ${variant.name}${variant.round ? ` (round ${variant.round})` : ''}, ${body}${variant.acceptEncoding ? ` (accept-encoding ${variant.acceptEncoding})` : ''}: ${row['req/s']} req/s, p50 ${row['p50 ms']} ms, p99 ${row['p99 ms']} ms, ${row['MiB/s']} MiB/s, carrier CPU ${cpuPerRequest} µs/req, service ${servicePerRequest} µs/req and ${row['svc conns/req']} new connections/req, errors ${row.errors}`,
          );
          rows.push({ ...row, path: setup.note });
        }
      }
    } finally {
      await setup.teardown();
    }
    if (setup.profileDir) profiles.push({ scenario: scenario.name, dir: setup.profileDir });
  }
  await stop(servicesProcess.child);
  for (const child of children) if (child !== undefined) await stop(child);

  const cores = cpus();
  console.log(
    `\nedgeward HTTPS edge bench — ${new Date().toISOString()}, node ${process.version}, ${cores.length} cores (available parallelism ${availableParallelism()}) × ${cores[0]?.model.trim()}, loopback only`,
  );
  console.log(
    `autocannon ${connections} HTTP/1.1 keep-alive connections × ${seconds} s (after ${warmup} s warm-up) per row, Host/SNI ${HOST}; bodies: ${bodies.map((body) => `${body} = ${Buffer.byteLength(BODIES[body])} B text/plain`).join(', ')}; latency has 1 ms resolution.\n`,
  );
  console.table(rows.map(({ path: _path, ...row }) => row));
  const notes = new Map(rows.map((row) => [row.scenario.replace(/ (modules|\+ gzip)/g, ''), row.path]));
  for (const [scenario, note] of notes) console.log(`  ${scenario}: ${note}`);
  for (const { scenario, reason } of skipped) console.log(`  SKIPPED ${scenario}: ${reason}`);

  // One figure per scenario and body: the mean over its rounds (edgeward and edgeward modules run
  // BENCH_ROUNDS times each, alternating).
  const mean = (values) =>
    values.every((value) => typeof value === 'number')
      ? values.reduce((sum, value) => sum + value, 0) / values.length
      : '—';
  const summary = (scenario, body) => {
    const of = rows.filter((row) => row.scenario === scenario && row.body === body);
    if (of.length === 0) return undefined;
    const column = (name) => mean(of.map((row) => row[name]));
    return {
      scenario,
      body,
      rounds: of.length,
      'req/s': Math.round(column('req/s')),
      'req/s range':
        of.length > 1
          ? `${Math.min(...of.map((row) => row['req/s']))}–${Math.max(...of.map((row) => row['req/s']))}`
          : '',
      'p50 ms': column('p50 ms'),
      'p99 ms': column('p99 ms'),
      'cpu µs/req': typeof column('cpu µs/req') === 'number' ? Math.round(column('cpu µs/req')) : '—',
    };
  };
  const scenarioNames = [...new Set(rows.map((row) => row.scenario))];
  const summaries = bodies.flatMap((body) =>
    scenarioNames.map((scenario) => summary(scenario, body)).filter((entry) => entry !== undefined),
  );
  if (rows.some((row) => row.round > 1)) {
    console.log('\nPer scenario and body, the mean over its rounds:');
    console.table(summaries);
  }
  const ratio = (a, b) =>
    typeof a === 'number' && typeof b === 'number' && b > 0 ? Number((a / b).toFixed(2)) : '—';
  const ratios = [];
  for (const body of bodies) {
    for (const ours of ['edgeward', 'edgeward modules']) {
      const edgeward = summary(ours, body);
      if (!edgeward) continue;
      for (const base of ['direct tls', 'rathole tls', 'rathole tcp', 'direct http']) {
        const baseline = summary(base, body);
        if (!baseline) continue;
        ratios.push({
          ratio: `${ours} ÷ ${base}`,
          body,
          'req/s': ratio(edgeward['req/s'], baseline['req/s']),
          'p50 (lower is better)': ratio(edgeward['p50 ms'], baseline['p50 ms']),
          'p99 (lower is better)': ratio(edgeward['p99 ms'], baseline['p99 ms']),
          'cpu µs/req (lower is better)': ratio(edgeward['cpu µs/req'], baseline['cpu µs/req']),
        });
      }
    }
  }
  if (ratios.length > 0) {
    console.log(
      '\nRatios, edgeward ÷ baseline (req/s: above 1 means edgeward is faster; latency and CPU: below 1 means edgeward is better):',
    );
    console.table(ratios);
  }
  // Module cost: each modules row against the plain row of the same round, then the mean.
  const moduleCost = [];
  for (const body of bodies) {
    const plainRows = rows.filter((row) => row.scenario === 'edgeward' && row.body === body);
    const modulesRows = rows.filter((row) => row.scenario === 'edgeward modules' && row.body === body);
    const pairs = plainRows
      .map((plain) => [plain, modulesRows.find((row) => row.round === plain.round)])
      .filter(([, withModules]) => withModules !== undefined);
    if (pairs.length > 0) {
      const shares = pairs.map(([plain, withModules]) => withModules['req/s'] / plain['req/s']);
      const share = mean(shares);
      const cpuShares = pairs.map(([plain, withModules]) =>
        typeof plain['cpu µs/req'] === 'number' && typeof withModules['cpu µs/req'] === 'number'
          ? withModules['cpu µs/req'] / plain['cpu µs/req']
          : '—',
      );
      const cpuShare = mean(cpuShares);
      moduleCost.push({
        rows: 'edgeward modules ÷ edgeward',
        body,
        'req/s per round': shares.map((value) => value.toFixed(3)).join(', '),
        'req/s mean': Number(share.toFixed(3)),
        'throughput cost': `${((1 - share) * 100).toFixed(1)} %`,
        'cpu µs/req': `${summary('edgeward', body)['cpu µs/req']} → ${summary('edgeward modules', body)['cpu µs/req']}`,
        'cpu cost': typeof cpuShare === 'number' ? `${((cpuShare - 1) * 100).toFixed(1)} %` : '—',
        'goal (< 10 %)': share > 0.9 ? 'met' : 'NOT met',
      });
    }
    const gzip = summary('edgeward modules + gzip', body);
    const plain = summary('edgeward', body);
    if (gzip && plain) {
      const share = gzip['req/s'] / plain['req/s'];
      moduleCost.push({
        rows: 'edgeward modules + gzip ÷ edgeward',
        body,
        'req/s per round': '',
        'req/s mean': Number(share.toFixed(3)),
        'throughput cost': `${((1 - share) * 100).toFixed(1)} %`,
        'cpu µs/req': `${plain['cpu µs/req']} → ${gzip['cpu µs/req']}`,
        'cpu cost':
          typeof plain['cpu µs/req'] === 'number' && typeof gzip['cpu µs/req'] === 'number'
            ? `${((gzip['cpu µs/req'] / plain['cpu µs/req'] - 1) * 100).toFixed(1)} %`
            : '—',
        'goal (< 10 %)': 'n/a (compresses)',
      });
    }
  }
  if (moduleCost.length > 0) {
    console.log(
      '\nModule cost: the modules route ÷ the plain route on the same edge (the goal: modules cost under 10 % of throughput; the gzip row does real compression work and is not held to it):',
    );
    console.table(moduleCost);
  }
  for (const { scenario, dir: profileDir } of profiles)
    for (const part of ['edge', 'agent']) printHotspots(`${scenario}, ${part}`, join(profileDir, part));

  const elapsed = (Date.now() - started) / 1000;
  const busy = machineBusySeconds();
  const benchCpu = treeCpuSeconds([process.pid]);
  const others =
    busy === undefined || busyBefore === undefined || benchCpu === undefined || benchCpuBefore === undefined
      ? ''
      : `; other processes on this machine used ${((busy - busyBefore - (benchCpu - benchCpuBefore)) / elapsed).toFixed(2)} cores on average meanwhile (the bench ${((benchCpu - benchCpuBefore) / elapsed).toFixed(2)})`;
  console.log(
    `\ntotal bench time: ${Math.round(elapsed)} s; load average (1/5/15 min) before ${loadBefore}, after ${loadAverage()}${others}`,
  );
  process.exit(0);
}

/**
 * One request outside the load run, checking that the path answers what it should: status 200, the
 * whole body, and through the modules route the headers the modules add (and compression when the
 * client asks for it). Returns a short description for the table's `check` column; throws if wrong.
 */
async function probe(setup, body, variant) {
  const { host, acceptEncoding } = variant;
  const expected = BODIES[body];
  const client = setup.protocol === 'https' ? https : http;
  const answer = await new Promise((resolve, reject) => {
    const request = client.request(
      {
        host: '127.0.0.1',
        port: setup.port,
        path: PATHS[body],
        agent: false,
        headers: { host, ...(acceptEncoding && { 'accept-encoding': acceptEncoding }) },
        ...(setup.protocol === 'https' && { servername: host, rejectUnauthorized: false }),
        timeout: 5000,
      },
      (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) }),
        );
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', reject);
    request.end();
  });
  const encoding = answer.headers['content-encoding'];
  const text = (encoding === 'gzip' ? gunzipSync(answer.body) : answer.body).toString();
  const problems = [];
  if (answer.status !== 200) problems.push(`status ${answer.status}`);
  if (text !== expected) problems.push(`body ${answer.body.length} B, not the expected ${expected.length} B`);
  if (variant.modules) {
    if (answer.headers['x-bench-seen'] !== 'edgeward') problems.push('request_headers not applied');
    if (answer.headers[ADDED_RESPONSE_HEADER] !== '1') problems.push('response_headers not applied');
    if (acceptEncoding && encoding !== acceptEncoding)
      problems.push(`not compressed (${encoding ?? 'identity'})`);
  }
  if (problems.length > 0) throw new Error(`${variant.name}: ${host}${PATHS[body]}: ${problems.join(', ')}`);
  return encoding ? `ok, ${encoding} ${answer.body.length} B` : 'ok';
}

/** Waits until every row's path answers correctly (the edge may still be applying its config). */
async function waitReady(setup, checks, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      for (const { body, variant } of checks) await probe(setup, body, variant);
      return;
    } catch (error) {
      last = error;
    }
    await sleep(200);
  }
  throw new Error(`the path did not answer correctly within ${timeoutMs / 1000} s: ${last?.message}`);
}

/**
 * Hotspots of one process from its `--cpu-prof` profile (busy time only, idle excluded): self time
 * by function (top 15); edgeward's own functions (dist/) by inclusive time, i.e. with what they
 * call (top 10); and the shares of busy time by where the code lives.
 */
function printHotspots(title, profileDir) {
  let files = [];
  try {
    files = readdirSync(profileDir).filter((name) => name.endsWith('.cpuprofile'));
  } catch {}
  if (files.length === 0) {
    console.log(`\n${title}: no CPU profile in ${profileDir} (did the process exit cleanly?)`);
    return;
  }
  const distUrl = pathToFileURL(dist).href;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8'));
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const parentOf = new Map();
    for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
    const selfTime = new Map();
    // timeDeltas[i] is the time before sample i: charge it to that sample's node.
    profile.samples.forEach((id, index) => {
      selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
    });
    const name = (node) => {
      const { functionName, url, lineNumber } = node.callFrame;
      const short = url.replace(pathToFileURL(root).href, '').replace(/^file:\/\//, '');
      return `${functionName || '(anonymous)'} ${short ? `${short}:${lineNumber + 1}` : ''}`.trim();
    };
    const placeOf = (node) => {
      const { functionName, url } = node.callFrame;
      if (!url) return functionName.startsWith('(') ? functionName : '(native)';
      if (url.startsWith('node:')) return 'node: internals';
      if (url.includes('/node_modules/'))
        return `node_modules/${url.split('/node_modules/')[1].split('/')[0]}`;
      return url.startsWith(distUrl) ? 'edgeward dist/' : 'other';
    };
    const bySelf = new Map();
    const byPlace = new Map();
    const ownInclusive = new Map();
    let busy = 0;
    for (const [id, micros] of selfTime) {
      const node = nodes.get(id);
      if (node.callFrame.functionName === '(idle)') continue;
      busy += micros;
      bySelf.set(name(node), (bySelf.get(name(node)) ?? 0) + micros);
      byPlace.set(placeOf(node), (byPlace.get(placeOf(node)) ?? 0) + micros);
      const counted = new Set();
      for (let at = id; at !== undefined; at = parentOf.get(at)) {
        const frame = nodes.get(at);
        if (!frame.callFrame.url.startsWith(distUrl) || counted.has(name(frame))) continue;
        counted.add(name(frame));
        ownInclusive.set(name(frame), (ownInclusive.get(name(frame)) ?? 0) + micros);
      }
    }
    const table = (entries, limit, column) =>
      [...entries]
        .sort((a, b) => b[1] - a[1])
        .slice(0, limit)
        .map(([label, micros]) => ({
          [column]: label.length > 100 ? `…${label.slice(-99)}` : label,
          ms: Math.round(micros / 1000),
          '% of busy': Number(((micros / busy) * 100).toFixed(1)),
        }));
    console.log(
      `\n${title}: ${join(profileDir, file)} — ${(busy / 1e6).toFixed(1)} s busy over the process's life (start-up included); self time by function:`,
    );
    console.table(table(bySelf, 15, 'function'));
    console.log("  edgeward's own functions, inclusive (with what they call):");
    console.table(table(ownInclusive, 10, 'function'));
    console.log('  self time by place:');
    console.table(table(byPlace, 8, 'place'));
  }
}

/** A CA and a certificate for HOST and MODULES_HOST (EC P-256), for the services, the HTTPS edge and rathole's tls transport. */
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
  openssl('req', ...ec, '-keyout', file('edge.key'), '-out', file('edge.csr'), '-subj', `/CN=${HOST}`);
  writeFileSync(
    file('edge.ext'),
    `basicConstraints=CA:FALSE\nsubjectAltName=DNS:${HOST},DNS:${MODULES_HOST}\nextendedKeyUsage=serverAuth\n`,
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

/** `rathole --server` and `rathole --client` carrying one service (the HTTPS one) over `transport`. */
async function setupRathole(dir, rathole, transport, pki, httpsPort, startChild, stop) {
  const work = join(dir, `rathole-${transport}`);
  mkdirSync(work, { recursive: true });
  const controlPort = await freePort();
  const front = await freePort();
  let serverTransport = `[server.transport]\ntype = "${transport}"\n`;
  let clientTransport = `[client.transport]\ntype = "${transport}"\n`;
  if (transport === 'tls') {
    serverTransport += `[server.transport.tls]\npkcs12 = "${pki.pfx}"\npkcs12_password = "${pki.pfxPassword}"\n`;
    clientTransport += `[client.transport.tls]\ntrusted_root = "${pki.caCert}"\nhostname = "${HOST}"\n`;
  } else if (transport === 'noise') {
    const keys = execFileSync(rathole.bin, ['--genkey'], { encoding: 'utf8' });
    const [, privateKey, publicKey] = /Private Key:\s*(\S+)\s*Public Key:\s*(\S+)/.exec(keys) ?? [];
    if (!privateKey) throw new Error(`rathole --genkey printed no keys: ${keys}`);
    serverTransport += `[server.transport.noise]\nlocal_private_key = "${privateKey}"\n`;
    clientTransport += `[client.transport.noise]\nremote_public_key = "${publicKey}"\n`;
  }
  writeFileSync(
    join(work, 'server.toml'),
    [
      `[server]\nbind_addr = "127.0.0.1:${controlPort}"\n`,
      serverTransport,
      `[server.services.https]\ntoken = "bench-https-token"\nbind_addr = "127.0.0.1:${front}"\n`,
    ].join('\n'),
  );
  writeFileSync(
    join(work, 'client.toml'),
    [
      `[client]\nremote_addr = "127.0.0.1:${controlPort}"\n`,
      clientTransport,
      `[client.services.https]\ntoken = "bench-https-token"\nlocal_addr = "127.0.0.1:${httpsPort}"\n`,
    ].join('\n'),
  );
  const quiet = { env: { ...process.env, RUST_LOG: 'error' }, cwd: work };
  const serverProcess = startChild(rathole.bin, ['--server', join(work, 'server.toml')], quiet);
  serverProcess.info.catch(() => {});
  await waitListening(controlPort, 5000);
  const clientProcess = startChild(rathole.bin, ['--client', join(work, 'client.toml')], quiet);
  clientProcess.info.catch(() => {});
  return {
    protocol: 'https',
    port: front,
    note: `client TLS → rathole ${rathole.version} server → ${transport} transport${transport === 'tls' ? ' (native-tls/OpenSSL)' : transport === 'noise' ? ' (Noise)' : ' (plaintext)'} → rathole client → service (node:https): TLS terminated at the service. rathole 0.5.0 sets TCP_NODELAY on its transport connections only, not on the public (visitor) socket nor the one to the service, and it copies in 8 KiB pieces: an answer longer than 8 KiB waits for the client's delayed ACK (40 ms on Linux)`,
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
else if (role === 'services') await runServices(JSON.parse(process.env.BENCH_ROLE_CONFIG));
else await main();
