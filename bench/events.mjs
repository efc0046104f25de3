// Event delivery benchmark: N changes through the API (`POST /ip_policies`, one
// `ip_policy_created.v0` event each) delivered by `edgeward server`'s dispatcher to a Kinesis
// stream on moto (a local AWS emulator), next to the same N records put straight into the same
// moto by a plain PutRecords loop, in one run so the ratios are fair. Loopback only; every run is
// bounded.
//   node bench/events.mjs                      (BENCH_EVENTS=10000, 1 shard; BENCH_SHARDS=1,4 for more)
// Scenarios (BENCH_SCENARIOS, comma separated), once per shard count in BENCH_SHARDS:
//   baseline  this process puts N envelope-sized records into a fresh stream with PutRecords,
//             500 a call, one call at a time: what moto itself takes. It runs right before the
//             live row and again right before the drain, and each row's ratio uses the baseline
//             next to it (the load of a shared machine changes from minute to minute)
//   live      `edgeward server` (from dist/cli.js, SQLite) with a Kinesis destination and a
//             subscription to ip_policy_created.v0; this process makes N `POST /ip_policies {}`,
//             BENCH_CONCURRENCY in flight, while the dispatcher delivers. Gives the API's rate,
//             the end-to-end delivery rate and commit-to-delivery latency
//   drain     the same N creates on a server started with --no-event-delivery; then that server
//             stops and a new one starts on the same data directory with delivery on, and drains
//             the backlog: the dispatcher's own rate, free of the API's
// Every record is read back from Kinesis (GetRecords on every shard, from TRIM_HORIZON) and
// counted by event id: delivered, missing, duplicates.
// Latency, per event, from the event's commit: the event id (`ev_…`, time-ordered) carries the
// millisecond it was made, inside the change's transaction, just before its commit (the
// dispatcher's own histogram uses the same origin).
//   arrival   moto's ApproximateArrivalTimestamp (when PutRecords stored the record) − commit
//   acked     when the relay saw moto answer the PutRecords that carried it − commit (BENCH_PROXY)
//   readable  when this process's GetRecords poll (every BENCH_POLL_MS when idle) saw it − commit
//   server    edgeward_events_delivery_latency_seconds from the server's /metrics: when the
//             dispatcher saw PutRecords succeed − commit; quantiles interpolated inside its buckets
//             (…, 0.05, 0.1, 0.25, 0.5, 1, 2.5 s …), as Prometheus' histogram_quantile does
// Env knobs (defaults in brackets):
//   BENCH_EVENTS [10000]          changes (events) per scenario
//   BENCH_CONCURRENCY [16]        API requests in flight (undici Pool, that many connections)
//   BENCH_SHARDS [1]              shard counts of the streams, e.g. 1,4; every scenario runs once per count
//   BENCH_SCENARIOS [baseline,live,drain]
//   BENCH_POLL_MS [200]           pause of a shard's GetRecords loop after an empty answer (Kinesis
//                                 allows 5 GetRecords a second per shard; moto scans the whole
//                                 shard on every call, so faster polling loads moto and the machine)
//   BENCH_PROXY [1]               0: the server and the baseline talk to moto directly. 1: through a
//                                 small HTTP relay (a child process) that logs every PutRecords
//                                 (records per call, time in moto, gaps between calls)
//   BENCH_DELIVERY_TIMEOUT_SECONDS [180]   give up waiting for missing records this long after the
//                                 last commit (the row then shows them as missing)
//   BENCH_TIMEOUT_SECONDS [600]   the whole run; past it the bench stops everything and exits 3
//   BENCH_CPU_PROF                a directory: edgeward server runs with `node --cpu-prof`, one
//                                 profile per server (DIR/live-SHARDS, DIR/fill-SHARDS, DIR/drain-SHARDS),
//                                 written when it stops
//   BENCH_SQL_TRACE [0]           1: this file is preloaded into edgeward server (`node --import`) and
//                                 times every better-sqlite3 statement by SQL text; the top ones are
//                                 printed per server (diagnostics: it adds a little to each statement)
//   BENCH_BUILD [1]               0 skips `npm run build`
//   BENCH_DIST [dist/]            run edgeward from another build (keep it inside the repository)
//   BENCH_MOTO ["python3 -m moto.server"]   the moto command (it gets -H 127.0.0.1 -p PORT)
// Processes: this one (API load, baseline writer, Kinesis reader), moto, the relay, and edgeward
// server; moto and edgeward each under a small `--role guard` parent that stops it when this
// process goes, even after a kill -9.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  KinesisClient,
  ListShardsCommand,
  PutRecordsCommand,
} from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Pool } from 'undici';
import {
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
/** `sqltrace`: this file preloaded into edgeward server (`node --import`), see `runSqlTrace`. */
const role =
  roleIndex !== -1
    ? process.argv[roleIndex + 1]
    : process.env.BENCH_SQL_TRACE_FILE && process.execArgv.some((arg) => arg.includes('events.mjs'))
      ? 'sqltrace'
      : 'main';

const REGION = 'us-east-1';
const ACCOUNT = '123456789012';
const CREDS = { aws_access_key_id: 'AKIAEDGEWARDTEST0001', aws_secret_access_key: 'x' };
const EVENT_TYPE = 'ip_policy_created.v0';

// ---------------------------------------------------------------------------------------------
// Time-ordered ids, as src/crypto/ids.ts makes and reads them
// ---------------------------------------------------------------------------------------------

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** When an `ev_…` id was made (ms since the epoch): base62 of the suffix, >> 112 bits. */
function idTimeMs(id) {
  let value = 0n;
  for (const char of id.slice(id.indexOf('_') + 1)) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) throw new Error(`'${id}' is not a time-ordered id`);
    value = value * 62n + BigInt(digit);
  }
  return Number(value >> 112n);
}

function base62(number) {
  let out = '';
  do {
    out = ALPHABET[number % 62] + out;
    number = Math.floor(number / 62);
  } while (number > 0);
  return out;
}

/** A time-ordered id of `now` (the baseline's records carry their put time the same way). */
function timeOrderedId(prefix, now = Date.now()) {
  let value = (BigInt(now) << 112n) | (BigInt(`0x${randomBytes(14).toString('hex')}`) >> 1n);
  let out = '';
  while (value > 0n) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return `${prefix}_${out.padStart(27, '0')}`;
}

// ---------------------------------------------------------------------------------------------
// Child roles
// ---------------------------------------------------------------------------------------------

/**
 * `--role guard [--rm DIR] -- COMMAND ARGS…`: runs COMMAND with this process's stdout and stderr,
 * and stops it when the bench goes (stdin closing, even after a kill -9) or on SIGTERM. Exits with
 * COMMAND's code, after removing DIR (the bench's temp dir, which a killed bench cannot remove).
 */
function runGuard(argv) {
  const [command, ...args] = argv.slice(argv.indexOf('--') + 1);
  const rmIndex = argv.indexOf('--rm');
  const removeDir = rmIndex !== -1 && rmIndex < argv.indexOf('--') ? argv[rmIndex + 1] : undefined;
  const exit = (code) => {
    if (removeDir) rmSync(removeDir, { recursive: true, force: true });
    process.exit(code);
  };
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  let stopping = false;
  const stopChild = () => {
    if (stopping) return;
    stopping = true;
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 8000).unref();
  };
  process.stdin.resume();
  process.stdin.on('end', stopChild);
  process.stdin.on('error', stopChild);
  process.on('SIGTERM', stopChild);
  process.on('SIGINT', stopChild);
  child.on('exit', (code, signal) => exit(code ?? (signal ? 128 : 1)));
  child.on('error', (error) => {
    console.error(`guard: ${command}: ${error.message}`);
    exit(127);
  });
}

/**
 * `--role proxy`: an HTTP/1.1 relay in front of moto that logs every PutRecords call: start and end
 * (ms), records, HTTP status, FailedRecordCount. The bench takes the log over IPC (`take`).
 */
async function runProxy(config) {
  exitWithParent();
  const target = new URL(config.target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let calls = [];
  let otherCalls = 0;
  /** [event id, when its PutRecords was answered] per record moto accepted. */
  let acks = [];
  const server = http.createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const start = Date.now();
      const isPut = String(request.headers['x-amz-target'] ?? '').endsWith('.PutRecords');
      // Read after the answer went back, so the relay adds no parsing to the call's path.
      const putRecords = () => {
        try {
          return JSON.parse(body.toString()).Records.map((record) => {
            try {
              return JSON.parse(Buffer.from(record.Data, 'base64').toString('utf8')).event_id;
            } catch {
              return undefined;
            }
          });
        } catch {
          return [];
        }
      };
      const upstream = http.request(
        {
          host: target.hostname,
          port: target.port,
          method: request.method,
          path: request.url,
          headers: request.headers,
          agent,
        },
        (answer) => {
          const parts = [];
          answer.on('data', (chunk) => parts.push(chunk));
          answer.on('end', () => {
            const text = Buffer.concat(parts);
            const headers = { ...answer.headers };
            delete headers['transfer-encoding'];
            headers['content-length'] = String(text.length);
            response.writeHead(answer.statusCode, headers);
            response.end(text);
            const end = Date.now();
            if (!isPut) {
              otherCalls++;
              return;
            }
            const eventIds = putRecords();
            const records = eventIds.length;
            let failed = null;
            try {
              const result = JSON.parse(text.toString());
              failed = result.FailedRecordCount ?? null;
              if (answer.statusCode === 200)
                eventIds.forEach((eventId, index) => {
                  if (eventId && !result.Records?.[index]?.ErrorCode) acks.push([eventId, end]);
                });
            } catch {}
            calls.push([start, end, records, answer.statusCode, failed]);
          });
        },
      );
      upstream.on('error', (error) => {
        response.writeHead(502, { 'content-type': 'text/plain' });
        response.end(String(error));
        if (isPut) calls.push([start, Date.now(), putRecords().length, 502, null]);
      });
      upstream.end(body);
    });
  });
  process.on('message', (message) => {
    if (message !== 'take') return;
    process.send({ calls, otherCalls, acks });
    calls = [];
    otherCalls = 0;
    acks = [];
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () =>
    process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`),
  );
}

/**
 * Preloaded into edgeward server with BENCH_SQL_TRACE: times every better-sqlite3 statement
 * (synchronous, so the time includes the fsync of a commit and blocks the event loop), by SQL text,
 * and writes the tally to BENCH_SQL_TRACE_FILE when the server exits.
 */
function runSqlTrace(file) {
  const require = createRequire(join(dist, 'cli.js'));
  const Database = require('better-sqlite3');
  const tally = new Map();
  const started = Date.now();
  const shape = (sql) =>
    sql
      .replace(/\s+/g, ' ')
      .replace(/\((?:\?, )+\?\)(?:, \((?:\?, )+\?\))*/g, '(?…)')
      .replace(/in \((?:\?, )*\?\)/g, 'in (?…)')
      .slice(0, 110);
  const originalPrepare = Database.prototype.prepare;
  Database.prototype.prepare = function prepare(sql, ...rest) {
    const statement = originalPrepare.call(this, sql, ...rest);
    const key = shape(sql);
    for (const method of ['run', 'all', 'get']) {
      const original = statement[method];
      statement[method] = function timed(...args) {
        const t = performance.now();
        try {
          return original.apply(this, args);
        } finally {
          const ms = performance.now() - t;
          const entry = tally.get(key) ?? { calls: 0, ms: 0, max: 0 };
          entry.calls++;
          entry.ms += ms;
          entry.max = Math.max(entry.max, ms);
          tally.set(key, entry);
        }
      };
    }
    return statement;
  };
  process.on('exit', () => {
    const rows = [...tally].map(([sql, entry]) => ({ sql, ...entry }));
    writeFileSync(file, JSON.stringify({ seconds: (Date.now() - started) / 1000, rows }));
  });
}

// ---------------------------------------------------------------------------------------------
// The bench
// ---------------------------------------------------------------------------------------------

async function main() {
  const events = Number(env('BENCH_EVENTS', 10000));
  const concurrency = Number(env('BENCH_CONCURRENCY', 16));
  const shardCounts = env('BENCH_SHARDS', '1').split(',').map(Number);
  const wanted = new Set(env('BENCH_SCENARIOS', 'baseline,live,drain').split(','));
  for (const name of wanted)
    if (!['baseline', 'live', 'drain'].includes(name))
      throw new Error(`BENCH_SCENARIOS: unknown scenario ${name} (baseline, live, drain)`);
  const pollMs = Number(env('BENCH_POLL_MS', 200));
  const useProxy = env('BENCH_PROXY', '1') !== '0';
  const deliveryTimeoutMs = Number(env('BENCH_DELIVERY_TIMEOUT_SECONDS', 180)) * 1000;
  const timeoutSeconds = Number(env('BENCH_TIMEOUT_SECONDS', 600));
  const cpuProfDir = process.env.BENCH_CPU_PROF || undefined;
  const sqlTrace = env('BENCH_SQL_TRACE', '0') !== '0';
  const motoCommand = env('BENCH_MOTO', 'python3 -m moto.server').split(' ').filter(Boolean);

  const children = [];
  const killAll = () => {
    for (const child of children.splice(0).reverse()) if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));
  const log = (line) => console.error(`[bench] ${line}`);

  const started = Date.now();
  setTimeout(() => {
    console.error(
      `[bench] ABORTED: the run did not finish within BENCH_TIMEOUT_SECONDS=${timeoutSeconds} s; stopping moto, edgeward and the relay, removing temp dirs`,
    );
    process.exit(3);
  }, timeoutSeconds * 1000).unref();
  const loadAverage = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
  const loadBefore = loadAverage();
  const busyBefore = machineBusySeconds();
  const benchCpuBefore = treeCpuSeconds([process.pid]);

  if (env('BENCH_BUILD', '1') !== '0' && (wanted.has('live') || wanted.has('drain'))) {
    log('npm run build (BENCH_BUILD=0 skips)');
    const build = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
    if (build.status !== 0)
      log(`npm run build failed; using dist/ as it is:\n${(build.stdout + build.stderr).slice(-1500)}`);
  }
  if ((wanted.has('live') || wanted.has('drain')) && !existsSync(join(dist, 'server/events/dispatcher.js')))
    throw new Error(`${dist} has no event dispatcher (server/events/dispatcher.js); run npm run build`);
  const builtMs = existsSync(join(dist, 'server/events/dispatcher.js'))
    ? statSync(join(dist, 'server/events/dispatcher.js')).mtimeMs
    : 0;
  const builtAt = builtMs ? new Date(builtMs).toISOString().slice(0, 19).replace('T', ' ') : '?';

  const dir = mkdtempSync(join(tmpdir(), 'edgeward-events-bench-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

  // moto, under a guard.
  const motoPort = await freePort();
  const moto = spawn(
    process.execPath,
    // This guard also removes the temp dir when it goes, in case this process is killed.
    [self, '--role', 'guard', '--rm', dir, '--', ...motoCommand, '-H', '127.0.0.1', '-p', String(motoPort)],
    { stdio: ['pipe', 'pipe', 'pipe'], cwd: dir },
  );
  children.push(moto);
  let motoOutput = '';
  /** Tracebacks moto printed, by their last line (e.g. its unlocked reads racing PutRecords). */
  const motoErrors = new Map();
  const keepMotoOutput = (chunk) => {
    motoOutput = (motoOutput + chunk).slice(-4000);
    for (const match of String(chunk).matchAll(/^(\w*(?:Error|Exception)): (.*)$/gm)) {
      const key = `${match[1]}: ${match[2].slice(0, 80)}`;
      motoErrors.set(key, (motoErrors.get(key) ?? 0) + 1);
    }
  };
  moto.stdout.on('data', keepMotoOutput);
  moto.stderr.on('data', keepMotoOutput);
  try {
    await Promise.race([
      waitListening(motoPort, 30_000),
      once(moto, 'exit').then(() => {
        throw new Error('moto exited');
      }),
    ]);
  } catch (error) {
    throw new Error(
      `moto (${motoCommand.join(' ')}) did not start: ${error.message}\n${motoOutput}\n(pip install 'moto[server]')`,
    );
  }
  const motoUrl = `http://127.0.0.1:${motoPort}`;
  const motoVersion = spawnSync('python3', ['-c', 'import moto; print(moto.__version__)'], {
    encoding: 'utf8',
  }).stdout.trim();
  log(`moto ${motoVersion} on ${motoUrl}`);

  // The PutRecords relay.
  let proxy;
  let writeUrl = motoUrl;
  if (useProxy) {
    const child = spawn(process.execPath, [self, '--role', 'proxy'], {
      stdio: ['pipe', 'pipe', 'inherit', 'ipc'],
      env: { ...process.env, BENCH_ROLE_CONFIG: JSON.stringify({ target: motoUrl }) },
    });
    children.push(child);
    const { port } = await firstJsonLine(child);
    writeUrl = `http://127.0.0.1:${port}`;
    proxy = {
      take: async () => {
        const answer = once(child, 'message');
        child.send('take');
        return (await answer)[0];
      },
    };
    log(`PutRecords relay on ${writeUrl}`);
  }

  const kinesisClient = (endpoint) =>
    new KinesisClient({
      region: REGION,
      endpoint,
      credentials: { accessKeyId: CREDS.aws_access_key_id, secretAccessKey: CREDS.aws_secret_access_key },
      // HTTP/1.1: the Kinesis client defaults to HTTP/2, which moto does not speak.
      requestHandler: new NodeHttpHandler({
        httpAgent: new http.Agent({ keepAlive: true, maxSockets: 16 }),
        requestTimeout: 60_000,
      }),
      maxAttempts: 1,
    });
  const reader = kinesisClient(motoUrl);
  const writer = kinesisClient(writeUrl);

  let streamNumber = 0;
  async function createStream(label, shards) {
    const name = `edgeward-bench-${label}-${shards}-${++streamNumber}`;
    await reader.send(new CreateStreamCommand({ StreamName: name, ShardCount: shards }));
    for (let i = 0; ; i++) {
      const { StreamDescriptionSummary: summary } = await reader.send(
        new DescribeStreamSummaryCommand({ StreamName: name }),
      );
      if (summary.StreamStatus === 'ACTIVE') break;
      if (i > 100) throw new Error(`stream ${name} is still ${summary.StreamStatus}`);
      await sleep(100);
    }
    const { Shards } = await reader.send(new ListShardsCommand({ StreamName: name }));
    return {
      name,
      arn: `arn:aws:kinesis:${REGION}:${ACCOUNT}:stream/${name}`,
      shardIds: Shards.map((shard) => shard.ShardId),
    };
  }

  /** Reads every shard of `stream` from TRIM_HORIZON, until stopped. */
  function startReader(stream) {
    const byEvent = new Map();
    const state = { records: 0, duplicates: 0, calls: 0, errors: 0, lastError: '', inversions: 0 };
    let stopped = false;
    const loops = stream.shardIds.map(async (shardId) => {
      let { ShardIterator: iterator } = await reader.send(
        new GetShardIteratorCommand({
          StreamName: stream.name,
          ShardId: shardId,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      );
      let highest = '';
      while (!stopped) {
        let answer;
        try {
          answer = await reader.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 10000 }));
          state.calls++;
        } catch (error) {
          // moto iterates a shard's records unlocked while PutRecords appends to them: a read may
          // fail ("mutated during iteration"); the iterator is still good.
          state.errors++;
          state.lastError = error.message;
          await sleep(pollMs);
          continue;
        }
        const readMs = Date.now();
        for (const record of answer.Records ?? []) {
          state.records++;
          const data = Buffer.from(record.Data);
          const envelope = JSON.parse(data.toString('utf8'));
          const seen = byEvent.get(envelope.event_id);
          if (seen) {
            seen.copies++;
            state.duplicates++;
            continue;
          }
          if (envelope.event_id < highest) state.inversions++;
          else highest = envelope.event_id;
          byEvent.set(envelope.event_id, {
            commitMs: idTimeMs(envelope.event_id),
            arrivalMs: record.ApproximateArrivalTimestamp?.getTime() ?? Number.NaN,
            readMs,
            objectId: envelope.object?.id,
            bytes: data.length,
            copies: 1,
          });
        }
        iterator = answer.NextShardIterator;
        if ((answer.Records ?? []).length === 0) await sleep(pollMs);
      }
    });
    return {
      byEvent,
      state,
      /** Resolves when `count` distinct events were read or at `deadline` (ms); true if all came. */
      async waitFor(count, deadline) {
        while (byEvent.size < count && Date.now() < deadline) await sleep(20);
        return byEvent.size >= count;
      },
      async stop() {
        stopped = true;
        await Promise.all(loops);
      },
    };
  }

  /** Takes the relay's PutRecords log (calls since the last take). */
  const takeCalls = async () => (proxy ? await proxy.take() : { calls: undefined, acks: undefined });

  const throughputRows = [];
  const latencyRows = [];
  const batchRows = [];
  const notes = [];
  const baselineRate = new Map();
  const sqlReports = [];

  const bench = { self, dist, children };
  const adminKey = `ewk_bench_${randomBytes(16).toString('hex')}`;
  const headers = {
    authorization: `Bearer ${adminKey}`,
    'svc-version': '2',
    'content-type': 'application/json',
  };

  async function startServer(dataDir, delivery, profileName) {
    const args = ['server', '--data-dir', dataDir, '--port', '0', '--rate-limit', '0'];
    if (delivery) args.push('--aws-endpoint-url', writeUrl);
    else args.push('--no-event-delivery');
    const nodeArgs = cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', join(cpuProfDir, profileName)] : [];
    const extraEnv = { EDGEWARD_ADMIN_API_KEY: adminKey };
    const sqlTraceFile = sqlTrace ? join(dir, `sql-${profileName}.json`) : undefined;
    if (sqlTraceFile) {
      nodeArgs.push('--import', self);
      extraEnv.BENCH_SQL_TRACE_FILE = sqlTraceFile;
    }
    const server = startKitCli(bench, args, extraEnv, nodeArgs);
    const ready = await server.logLine((line) => line.msg === 'edgeward server ready');
    const url = String(ready.listen);
    const pool = new Pool(url, { connections: concurrency, pipelining: 1 });
    const api = async (method, path, body) => {
      const { statusCode, body: answer } = await pool.request({
        method,
        path,
        headers: body === undefined ? { authorization: headers.authorization, 'svc-version': '2' } : headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await answer.text();
      if (statusCode >= 300) throw new Error(`${method} ${path}: HTTP ${statusCode} ${text}`);
      return text ? JSON.parse(text) : {};
    };
    return {
      ...server,
      url,
      readyMs: Number(ready.time) || Date.now(),
      pool,
      api,
      async stop() {
        await pool.close().catch(() => {});
        if (server.child.exitCode !== null || server.child.signalCode !== null) return;
        const exited = once(server.child, 'exit');
        server.child.kill('SIGTERM');
        await Promise.race([exited, sleep(10_000).then(() => server.child.kill('SIGKILL'))]);
        if (sqlTraceFile && existsSync(sqlTraceFile))
          sqlReports.push({ name: profileName, ...JSON.parse(readFileSync(sqlTraceFile, 'utf8')) });
      },
    };
  }

  const scrape = async (server) => (await fetch(`${server.url}/metrics`)).text();

  async function subscribe(server, stream) {
    const destination = await server.api('POST', '/event_destinations', {
      description: `bench ${stream.name}`,
      target: { kinesis: { auth: { creds: CREDS }, stream_arn: stream.arn } },
    });
    await server.api('POST', '/event_subscriptions', {
      sources: [{ type: EVENT_TYPE }],
      destination_ids: [destination.id],
    });
    return destination.id;
  }

  /** N `POST /ip_policies {}`, `concurrency` in flight. */
  async function createMany(server) {
    const latencies = [];
    const objectIds = new Set();
    let errors = 0;
    let lastError = '';
    let next = 0;
    const first = Date.now();
    const worker = async () => {
      while (next < events) {
        next++;
        const t = performance.now();
        try {
          const created = await server.api('POST', '/ip_policies', {});
          objectIds.add(created.id);
        } catch (error) {
          errors++;
          lastError = error.message;
        }
        latencies.push(performance.now() - t);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const last = Date.now();
    latencies.sort((a, b) => a - b);
    if (errors > 0) notes.push(`${errors} of ${events} creates failed; the last: ${lastError}`);
    return {
      objectIds,
      errors,
      first,
      last,
      rate: objectIds.size / ((last - first) / 1000),
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
    };
  }

  /** delivery_status every 500 ms while `until` is pending: the largest backlog seen. */
  function watchBacklog(server, destinationId) {
    let stop = false;
    let maxBacklog = 0;
    let last;
    const samples = [];
    let errors = 0;
    let lastError = '';
    const loop = (async () => {
      while (!stop) {
        const t = performance.now();
        try {
          last = await server.api('GET', `/event_destinations/${destinationId}/delivery_status`);
          maxBacklog = Math.max(maxBacklog, last.backlog);
          samples.push([Math.round(performance.now() - t), last.backlog]);
        } catch (error) {
          errors++;
          lastError = error.message;
        }
        await sleep(500);
      }
    })();
    return async () => {
      stop = true;
      await loop;
      last = await server.api('GET', `/event_destinations/${destinationId}/delivery_status`);
      if (process.env.BENCH_DEBUG) log(`delivery_status [ms, backlog]: ${JSON.stringify(samples)}`);
      const slowest = Math.max(0, ...samples.map(([ms]) => ms));
      return {
        maxBacklog: Math.max(maxBacklog, last.backlog),
        status: last,
        watch: `delivery_status sampled ${samples.length} times, every 500 ms after the previous answer (slowest answer ${slowest} ms${errors ? `, ${errors} failed: ${oneLine(lastError)}` : ''})`,
      };
    };
  }

  /** Delivered, missing, duplicates and rates, from what was read back. */
  function summarize(readerResult, expectedIds, startMs, acks) {
    const seen = [...readerResult.byEvent.values()];
    // When the relay saw moto answer the PutRecords that carried each event (the first time).
    let acked;
    if (acks) {
      const firstAck = new Map();
      for (const [eventId, at] of acks) if (!firstAck.has(eventId)) firstAck.set(eventId, at);
      acked = [];
      for (const [eventId, entry] of readerResult.byEvent) {
        const at = firstAck.get(eventId);
        if (at !== undefined) acked.push(at - entry.commitMs);
      }
      acked.sort((a, b) => a - b);
    }
    let missing = 0;
    if (expectedIds) {
      const delivered = new Set(seen.map((entry) => entry.objectId));
      for (const id of expectedIds) if (!delivered.has(id)) missing++;
    } else missing = Math.max(0, events - seen.length);
    const lastArrival = Math.max(...seen.map((entry) => entry.arrivalMs));
    const lastCommit = Math.max(...seen.map((entry) => entry.commitMs));
    const arrival = seen.map((entry) => entry.arrivalMs - entry.commitMs).sort((a, b) => a - b);
    const readable = seen.map((entry) => entry.readMs - entry.commitMs).sort((a, b) => a - b);
    return {
      delivered: seen.length,
      missing,
      duplicates: readerResult.state.duplicates,
      inversions: readerResult.state.inversions,
      bytes: seen.reduce((sum, entry) => sum + entry.bytes, 0) / Math.max(1, seen.length),
      rate: seen.length / ((lastArrival - startMs) / 1000),
      seconds: (lastArrival - startMs) / 1000,
      tailMs: lastArrival - lastCommit,
      arrival,
      readable,
      acked,
      readerErrors: readerResult.state.errors,
      readerLastError: readerResult.state.lastError,
    };
  }

  /** Records per PutRecords call, time in moto, and the gaps between calls (the relay's log). */
  function batchRow(scenario, shards, calls, windowMs) {
    if (!calls || calls.length === 0) return;
    calls.sort((a, b) => a[0] - b[0]);
    const sizes = calls.map((call) => call[2]).sort((a, b) => a - b);
    const inMoto = calls.map((call) => call[1] - call[0]).sort((a, b) => a - b);
    const gaps = [];
    for (let i = 1; i < calls.length; i++) gaps.push(calls[i][0] - calls[i - 1][1]);
    gaps.sort((a, b) => a - b);
    const busyMs = calls.reduce((sum, call) => sum + call[1] - call[0], 0);
    const failed = calls.filter((call) => call[3] !== 200 || (call[4] ?? 0) > 0).length;
    batchRows.push({
      scenario,
      shards,
      PutRecords: calls.length,
      'records/call p50': quantile(sizes, 0.5),
      mean: Math.round((sizes.reduce((a, b) => a + b, 0) / sizes.length) * 10) / 10,
      max: sizes.at(-1),
      'calls of 500': sizes.filter((size) => size === 500).length,
      'calls < 10': sizes.filter((size) => size < 10).length,
      'ms in moto p50': quantile(inMoto, 0.5),
      'p99 ': quantile(inMoto, 0.99),
      'moto busy %': Math.round((busyMs / windowMs) * 100),
      'gap ms p50': gaps.length ? quantile(gaps, 0.5) : '—',
      'gap max': gaps.length ? gaps.at(-1) : '—',
      'failed calls': failed,
    });
  }

  const cpuOf = (child) => treeCpuSeconds([child.pid]) ?? Number.NaN;

  /**
   * The baseline's records: the shape (and about the size) of edgeward's ip_policy_created.v0
   * envelope. Ids that carry no time are made before the clock starts; a batch's event ids are one
   * time-ordered id of the moment the batch is built, its last 6 digits replaced by the record's
   * index (the time bits stay, so the latency is read the same way as edgeward's).
   */
  const baselineIds = Array.from({ length: events }, () => ({
    objectId: timeOrderedId('ipp'),
    deliveryId: timeOrderedId('evd'),
  }));
  const baselineBatch = (now, from, count) => {
    const stamp = timeOrderedId('ev', now).slice(0, -6);
    const createdAt = new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
    const batch = [];
    for (let index = from; index < from + count; index++) {
      const { objectId, deliveryId } = baselineIds[index];
      batch.push({
        Data: Buffer.from(
          JSON.stringify({
            id: deliveryId,
            event_id: stamp + base62(index).padStart(6, '0'),
            event_type: EVENT_TYPE,
            created_at: createdAt,
            object: {
              id: objectId,
              uri: `http://127.0.0.1:40000/ip_policies/${objectId}`,
              created_at: createdAt,
              description: '',
              metadata: '',
            },
          }),
        ),
        PartitionKey: objectId,
      });
    }
    return batch;
  };

  /** N records put straight into a fresh stream, 500 a call, one call at a time; read back like the others. */
  async function runBaseline(shards, when) {
    const stream = await createStream('base', shards);
    const readerResult = startReader(stream);
    await takeCalls();
    const motoCpu = cpuOf(moto);
    const first = Date.now();
    let lastPut = first;
    for (let done = 0; done < events; ) {
      const batch = baselineBatch(Date.now(), done, Math.min(500, events - done));
      let pending = batch;
      for (let tries = 0; pending.length > 0; tries++) {
        if (tries > 20) throw new Error('baseline: PutRecords kept failing');
        const answer = await writer.send(
          new PutRecordsCommand({ StreamName: stream.name, Records: pending }),
        );
        pending = pending.filter((_, index) => answer.Records?.[index]?.ErrorCode);
      }
      done += batch.length;
      lastPut = Date.now();
    }
    const complete = await readerResult.waitFor(events, Date.now() + deliveryTimeoutMs);
    await sleep(500); // late duplicates, if any
    await readerResult.stop();
    const { calls, acks } = await takeCalls();
    const summary = summarize(readerResult, undefined, first, acks);
    baselineRate.set(`${shards} ${when}`, summary.rate);
    batchRow(`baseline (${when})`, shards, calls, lastPut - first);
    if (!complete)
      notes.push(`baseline (${when}) ${shards} shard(s): only ${summary.delivered} of ${events} read back`);
    throughputRows.push({
      scenario: `PutRecords loop (baseline, ${when})`,
      shards,
      events,
      'API creates/s': '—',
      'API p50/p99 ms': '—',
      'delivered/s': Math.round(summary.rate),
      '÷ baseline': '1.00',
      'delivery s': round1(summary.seconds),
      'tail ms': summary.tailMs,
      delivered: summary.delivered,
      missing: summary.missing,
      duplicates: summary.duplicates,
      'max backlog': '—',
      'cpu s edgeward': '—',
      'cpu s moto': round1(cpuOf(moto) - motoCpu),
      'B/record': Math.round(summary.bytes),
    });
    latencyRows.push(latencyRow(`PutRecords loop (baseline, ${when})`, shards, summary, undefined));
    if (summary.readerErrors > 0)
      notes.push(
        `baseline (${when}) ${shards} shard(s): ${summary.readerErrors} GetRecords calls failed and were retried (${oneLine(summary.readerLastError)})`,
      );
    log(
      `baseline (${when}), ${shards} shard(s): ${Math.round(summary.rate)} records/s (put ${round1((lastPut - first) / 1000)} s)`,
    );
  }

  for (const shards of shardCounts) {
    // ---- baseline: PutRecords from this process, before the live row -----------------------
    if (wanted.has('baseline') && wanted.has('live')) await runBaseline(shards, 'before live');
    else if (wanted.has('baseline') && !wanted.has('drain')) await runBaseline(shards, 'alone');

    // ---- live: creates through the API while the dispatcher delivers ------------------------
    if (wanted.has('live')) {
      const stream = await createStream('live', shards);
      const dataDir = mkdtempSync(join(dir, 'live-'));
      const server = await startServer(dataDir, true, `live-${shards}`);
      try {
        const destinationId = await subscribe(server, stream);
        await sleep(1500); // the server's own start-up work settles; the dispatcher goes idle
        const readerResult = startReader(stream);
        await takeCalls();
        const serverCpu = cpuOf(server.child);
        const motoCpu = cpuOf(moto);
        const stopWatching = watchBacklog(server, destinationId);
        await scrape(server); // resets the server's event-loop delay histogram
        const created = await createMany(server);
        const complete = await readerResult.waitFor(created.objectIds.size, created.last + deliveryTimeoutMs);
        await sleep(1000); // late duplicates, if any
        await readerResult.stop();
        const { calls, acks } = await takeCalls();
        const { maxBacklog, status, watch } = await stopWatching();
        const metrics = await scrape(server);
        notes.push(`live ${shards} shard(s): ${loopDelay(metrics)}; ${watch}`);
        if (process.env.BENCH_DEBUG)
          log(
            metrics
              .split('\n')
              .filter((line) => line.startsWith('edgeward_events'))
              .join('\n'),
          );
        const serverCpuUsed = cpuOf(server.child) - serverCpu;
        const motoCpuUsed = cpuOf(moto) - motoCpu;
        const seen = [...readerResult.byEvent.values()];
        const firstCommit = Math.min(...seen.map((entry) => entry.commitMs));
        const summary = summarize(readerResult, created.objectIds, firstCommit, acks);
        batchRow('live', shards, calls, Math.max(...seen.map((e) => e.arrivalMs)) - firstCommit);
        if (!complete) notes.push(`live ${shards} shard(s): ${summary.missing} events never arrived`);
        const failures = metricValue(metrics, 'edgeward_events_delivery_failures_total');
        if (failures > 0)
          notes.push(`live ${shards} shard(s): ${failures} failed sends (retried with backoff)`);
        if (status.delivered !== created.objectIds.size || status.backlog !== 0)
          notes.push(
            `live ${shards} shard(s): delivery_status at the end: delivered ${status.delivered}, backlog ${status.backlog}, state ${status.state}`,
          );
        throughputRows.push({
          scenario: 'edgeward live (API → dispatcher)',
          shards,
          events: created.objectIds.size,
          'API creates/s': Math.round(created.rate),
          'API p50/p99 ms': `${round1(created.p50)}/${round1(created.p99)}`,
          'delivered/s': Math.round(summary.rate),
          '÷ baseline': ratio(summary.rate, baselineRate.get(`${shards} before live`)),
          'delivery s': round1(summary.seconds),
          'tail ms': summary.tailMs,
          delivered: summary.delivered,
          missing: summary.missing,
          duplicates: summary.duplicates,
          'max backlog': maxBacklog,
          'cpu s edgeward': round1(serverCpuUsed),
          'cpu s moto': round1(motoCpuUsed),
          'B/record': Math.round(summary.bytes),
        });
        latencyRows.push(latencyRow('edgeward live (API → dispatcher)', shards, summary, histogram(metrics)));
        if (summary.inversions > 0)
          notes.push(
            `live ${shards} shard(s): ${summary.inversions} records came after a record with a later event id on their shard (ids are made before commit; routing goes in commit-visible order)`,
          );
        if (summary.readerErrors > 0)
          notes.push(
            `live ${shards} shard(s): ${summary.readerErrors} GetRecords calls failed and were retried (${oneLine(summary.readerLastError)})`,
          );
        log(
          `live, ${shards} shard(s): API ${Math.round(created.rate)} creates/s, delivered ${Math.round(summary.rate)}/s, ${summary.missing} missing, ${summary.duplicates} duplicates`,
        );
      } finally {
        await server.stop();
      }
    }

    // ---- drain: a backlog of N, made with delivery off, then delivered ----------------------
    if (wanted.has('drain')) {
      const stream = await createStream('drain', shards);
      const dataDir = mkdtempSync(join(dir, 'drain-'));
      const filler = await startServer(dataDir, false, `fill-${shards}`);
      let created;
      let destinationId;
      let fillerCpu;
      try {
        destinationId = await subscribe(filler, stream);
        const before = cpuOf(filler.child);
        created = await createMany(filler);
        fillerCpu = cpuOf(filler.child) - before;
      } finally {
        await filler.stop();
      }
      // The baseline again, right before the drain: both are bulk PutRecords into a fresh stream,
      // so the machine's load (other jobs) should be the same for the two.
      if (wanted.has('baseline')) await runBaseline(shards, 'before drain');
      const readerResult = startReader(stream);
      await takeCalls();
      const motoCpu = cpuOf(moto);
      const server = await startServer(dataDir, true, `drain-${shards}`);
      try {
        const serverCpu = cpuOf(server.child);
        const stopWatching = watchBacklog(server, destinationId);
        await scrape(server);
        const complete = await readerResult.waitFor(created.objectIds.size, Date.now() + deliveryTimeoutMs);
        await sleep(1000);
        await readerResult.stop();
        const { calls, acks } = await takeCalls();
        const { maxBacklog, status, watch } = await stopWatching();
        const metrics = await scrape(server);
        notes.push(`drain ${shards} shard(s): ${loopDelay(metrics)}; ${watch}`);
        notes.push(
          `drain ${shards} shard(s): the server that made the backlog (--no-event-delivery) used ${round1(fillerCpu)} s of CPU for the ${created.objectIds.size} creates`,
        );
        const summary = summarize(readerResult, created.objectIds, server.readyMs, acks);
        batchRow('drain', shards, calls, summary.seconds * 1000);
        if (!complete) notes.push(`drain ${shards} shard(s): ${summary.missing} events never arrived`);
        const failures = metricValue(metrics, 'edgeward_events_delivery_failures_total');
        if (failures > 0)
          notes.push(`drain ${shards} shard(s): ${failures} failed sends (retried with backoff)`);
        if (status.delivered !== created.objectIds.size || status.backlog !== 0)
          notes.push(
            `drain ${shards} shard(s): delivery_status at the end: delivered ${status.delivered}, backlog ${status.backlog}, state ${status.state}`,
          );
        throughputRows.push({
          scenario: 'edgeward drain (backlog of N)',
          shards,
          events: created.objectIds.size,
          'API creates/s': `${Math.round(created.rate)} (no delivery)`,
          'API p50/p99 ms': `${round1(created.p50)}/${round1(created.p99)}`,
          'delivered/s': Math.round(summary.rate),
          '÷ baseline': ratio(summary.rate, baselineRate.get(`${shards} before drain`)),
          'delivery s': round1(summary.seconds),
          'tail ms': '—',
          delivered: summary.delivered,
          missing: summary.missing,
          duplicates: summary.duplicates,
          'max backlog': maxBacklog,
          'cpu s edgeward': round1(cpuOf(server.child) - serverCpu),
          'cpu s moto': round1(cpuOf(moto) - motoCpu),
          'B/record': Math.round(summary.bytes),
        });
        if (summary.readerErrors > 0)
          notes.push(
            `drain ${shards} shard(s): ${summary.readerErrors} GetRecords calls failed and were retried (${oneLine(summary.readerLastError)})`,
          );
        log(`drain, ${shards} shard(s): delivered ${Math.round(summary.rate)}/s`);
      } finally {
        await server.stop();
      }
    }
  }

  const cpuModel = cpus()[0]?.model ?? 'unknown CPU';
  const git = (...args) => spawnSync('git', args, { cwd: root, encoding: 'utf8' }).stdout?.trim() ?? '';
  const dirty = git('status', '--porcelain', '--', 'src/server', 'src/cli').length > 0;
  const stale = newestMtime(join(root, 'src/server')) > builtMs;
  console.log(
    `\nedgeward event delivery to Kinesis (moto ${motoVersion}), ${events} events per row, ${concurrency} API requests in flight, SQLite; node ${process.version}, ${availableParallelism()} × ${cpuModel}${useProxy ? '; server and baseline write through the PutRecords relay' : ''}; edgeward ${dist === join(root, 'dist') ? 'dist/' : dist} built ${builtAt} UTC; HEAD ${git('rev-parse', '--short', 'HEAD') || '?'}${dirty ? ', src/server or src/cli with uncommitted changes' : ''}${stale ? '; WARNING: src/server changed after that build' : ''}\n`,
  );
  console.log(
    'Throughput. delivered/s: events read back ÷ (last arrival in Kinesis − start); start = the first commit (live), the first PutRecords (baseline), the new server ready (drain). tail ms: last arrival − last commit.',
  );
  console.table(throughputRows);
  console.log(
    'Commit-to-delivery latency, ms (live: from the commit ms in the event id; baseline: from the batch being built). arrival: moto stored it; readable: our GetRecords poll saw it; server: the dispatcher histogram (bucket-interpolated).',
  );
  console.table(latencyRows);
  if (batchRows.length > 0) {
    console.log('PutRecords calls as the relay saw them (gap: end of a call → start of the next):');
    console.table(batchRows);
  }
  for (const report of sqlReports) {
    const total = report.rows.reduce((sum, row) => sum + row.ms, 0);
    console.log(
      `\nSQLite statements in edgeward server "${report.name}" (BENCH_SQL_TRACE): ${round1(total / 1000)} s in better-sqlite3 over ${round1(report.seconds)} s (synchronous: the event loop waits), top 12 by time:`,
    );
    console.table(
      report.rows
        .sort((a, b) => b.ms - a.ms)
        .slice(0, 12)
        .map((row) => ({
          sql: row.sql,
          calls: row.calls,
          's total': round1(row.ms / 1000),
          'ms/call': Math.round((row.ms / row.calls) * 100) / 100,
          'ms max': Math.round(row.max),
        })),
    );
  }
  for (const [error, count] of motoErrors)
    notes.push(`moto printed ${count} traceback(s) ending in ${error}`);
  for (const note of notes) console.log(`note: ${note}`);

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

function latencyRow(scenario, shards, summary, serverHistogram) {
  const ms = (value) => (Number.isFinite(value) ? Math.round(value) : '—');
  return {
    scenario,
    shards,
    'arrival p50': ms(quantile(summary.arrival, 0.5)),
    'arrival p99': ms(quantile(summary.arrival, 0.99)),
    'arrival max': ms(summary.arrival.at(-1)),
    'acked p50': summary.acked ? ms(quantile(summary.acked, 0.5)) : '—',
    'acked p99': summary.acked ? ms(quantile(summary.acked, 0.99)) : '—',
    'acked mean': summary.acked ? ms(mean(summary.acked)) : '—',
    'readable p50': ms(quantile(summary.readable, 0.5)),
    'readable p99': ms(quantile(summary.readable, 0.99)),
    'readable max': ms(summary.readable.at(-1)),
    'server p50': serverHistogram ? ms(serverHistogram.p50 * 1000) : '—',
    'server p99': serverHistogram ? ms(serverHistogram.p99 * 1000) : '—',
    'server mean': serverHistogram ? ms(serverHistogram.mean * 1000) : '—',
    'server count': serverHistogram ? serverHistogram.count : '—',
  };
}

/** edgeward_events_delivery_latency_seconds{target="kinesis"}: p50, p99 as histogram_quantile does. */
function histogram(metrics) {
  const buckets = [];
  let sum = 0;
  let count = 0;
  for (const line of metrics.split('\n')) {
    if (!line.includes('target="kinesis"')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith('edgeward_events_delivery_latency_seconds_bucket{')) {
      const le = /le="([^"]+)"/.exec(line)[1];
      buckets.push([le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), value]);
    } else if (line.startsWith('edgeward_events_delivery_latency_seconds_sum')) sum = value;
    else if (line.startsWith('edgeward_events_delivery_latency_seconds_count')) count = value;
  }
  buckets.sort((a, b) => a[0] - b[0]);
  const q = (quantileWanted) => {
    const rank = quantileWanted * count;
    let lower = 0;
    let below = 0;
    for (const [upper, cumulative] of buckets) {
      if (cumulative >= rank) {
        if (upper === Number.POSITIVE_INFINITY) return lower;
        return lower + (upper - lower) * ((rank - below) / Math.max(1, cumulative - below));
      }
      lower = upper;
      below = cumulative;
    }
    return Number.NaN;
  };
  return { p50: q(0.5), p99: q(0.99), mean: count ? sum / count : Number.NaN, count };
}

/** The server's event-loop delay since the previous scrape (prom-client resets it on each). */
function loopDelay(metrics) {
  const ms = (name) =>
    Math.round(metricValue(metrics, `edgeward_server_nodejs_eventloop_lag_${name}_seconds`) * 1000);
  return `edgeward server's event-loop delay meanwhile (its /metrics): mean ${ms('mean')} ms, p99 ${ms('p99')} ms, max ${ms('max')} ms`;
}

/** The sum of a counter's samples over all label sets. */
function metricValue(metrics, name) {
  let total = 0;
  for (const line of metrics.split('\n'))
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      total += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
  return total;
}

function mean(values) {
  return values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : Number.NaN;
}

/** Nearest-rank quantile of a sorted array. */
function quantile(sorted, q) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

function oneLine(text) {
  return text.replace(/\s+/g, ' ').slice(0, 100);
}

function round1(value) {
  return Number.isFinite(value) ? Math.round(value * 10) / 10 : '—';
}

function ratio(value, baseline) {
  return baseline ? (value / baseline).toFixed(2) : '—';
}

async function firstJsonLine(child) {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const newline = out.indexOf('\n');
      if (newline >= 0) resolve(JSON.parse(out.slice(0, newline)));
    });
    child.once('exit', (code) => reject(new Error(`child exited with ${code} before it was ready`)));
  });
}

/** The latest modification time (ms) of a file under `dir`. */
function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile())
      newest = Math.max(newest, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
  return newest;
}

if (role === 'sqltrace') runSqlTrace(process.env.BENCH_SQL_TRACE_FILE);
else if (role === 'guard') runGuard(process.argv);
else if (role === 'proxy') await runProxy(JSON.parse(process.env.BENCH_ROLE_CONFIG));
else await main();
