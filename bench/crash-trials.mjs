// Crash trials: kill -9 the operator and the server at chosen points and count what broke.
//
// Run: `npm run bench:crash` or `node --import tsx bench/crash-trials.mjs`. Like
// operator-convergence.mjs it runs the TypeScript sources through tsx, on a throwaway etcd +
// kube-apiserver (src/dev-cluster), with `src/cli.ts server` and `src/cli.ts operator` as child
// processes. Loopback only; every process and temp dir is removed in `finally`.
//
// BENCH_PARTS (default `operator,failover,server`) picks what runs:
//
// operator — BENCH_TRIALS (default 10) trials per point in BENCH_POINTS (default all three). The
//   operator talks to both APIs through KillProxy (bench/tools/kill-proxy.mjs): plain HTTP in front
//   of the edgeward server, and HTTPS in front of the kube-apiserver (the proxy terminates TLS with
//   the apiserver's own serving certificate and goes on with the admin client certificate). The
//   proxy SIGKILLs the operator when it sees the chosen answer come back, then either drops that
//   answer (the write happened, the operator never learnt of it) or forwards it and kills 0-20 ms
//   later (the operator may have acted on it); trials alternate between the two. No test hook is
//   in product code, and "during a token Secret write" is a real Secret write on the apiserver,
//   seen on the wire, rather than a guess at a delay.
//   - create: a TunnelCredential and an IPPolicy are applied; the kill lands on the 2xx answer to
//     the POST that creates the one or the other (alternating) — after the remote create, before
//     the status write.
//   - token-secret: a TunnelCredential is applied; the kill lands on the apiserver's answer to the
//     write of its token Secret (after the credential was created, before status.id is written).
//   - replace: a Ready TunnelCredential's token Secret is deleted behind the operator's back, which
//     makes it replace the credential (managed/apply.ts replaceRemote: create the new one, write its
//     token, delete the old one, write status); the kill lands on the create, the Secret write or
//     the old credential's DELETE (in turn).
//   After each kill the operator is restarted; the trial waits until its CRs are Ready and the
//   invariants hold (bounded by BENCH_SETTLE_SECONDS, default 60; what still fails then counts),
//   then deletes the CRs. Counted: duplicates (more server resources carrying a CR's description
//   than one), wrong ids (status.id is not the resource carrying the description), lost tokens (a
//   Ready TunnelCredential whose Secret is missing, names another credential, or whose token's
//   SHA-256 is not the one the server gives edges for status.id, read from the edge feed as an edge
//   would), stuck finalizers (CRs not gone BENCH_DELETE_SECONDS, default 30, after the delete),
//   orphans (server resources with the trial's descriptions left after the deletes). `ready s`:
//   from the restart to converged, tsx start-up and informer lists included; `after readyz s`: from
//   the restarted operator's /readyz to converged, the repair alone.
//
// failover — BENCH_FAILOVER_TRIALS (default 5): two operator replicas with --leader-elect; the
//   Lease holder is SIGKILLed, a new IPPolicy is applied at once, and the bench times the kill to
//   the other replica holding the Lease and to the new CR being Ready. The Lease duration is the
//   elector's default, 15 s (no flag changes it). The killed replica is restarted as standby.
//
// server — BENCH_SERVER_KILLS (default 5) per store (BENCH_STORES, default `sqlite,postgres`; both
//   durable as in bench/api-load.mjs): 24 writers POST /ip_policies, the server is SIGKILLed at a
//   random moment (0.5-3 s into the load), restarted on the same data, and every write it
//   acknowledged (2xx) so far is looked for; lost must be 0.

import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { controlPlaneDown } from '../src/dev-cluster/control-plane.ts';
import { freePort } from '../src/dev-cluster/free-port.ts';
import { findPostgresBinaries, startTestCluster } from '../test/support/postgres-cluster.ts';
import { createTestDatabase } from '../test/support/postgres-database.ts';
import { KillProxy } from './tools/kill-proxy.mjs';
import { apiClient, env } from './tools/kit.mjs';
import {
  bindFinalizerPolicy,
  children,
  clusterWithCrds,
  exited,
  FINALIZER_POLICY,
  GROUP_VERSION,
  killChildrenOnSignal,
  operatorReady,
  readyOf,
  startChild,
  startServer,
  stopChild,
  waitUntil,
} from './tools/operator-kit.mjs';

const PARTS = env('BENCH_PARTS', 'operator,failover,server').split(',');
const POINTS = env('BENCH_POINTS', 'create,token-secret,replace').split(',');
const POLICY_NOTE = FINALIZER_POLICY ? ', finalizer admission policy bound' : '';
const TRIALS = Number(process.argv[2] ?? env('BENCH_TRIALS', '10'));
const FAILOVER_TRIALS = Number(env('BENCH_FAILOVER_TRIALS', '5'));
const SERVER_KILLS = Number(env('BENCH_SERVER_KILLS', '5'));
const STORES = env('BENCH_STORES', 'sqlite,postgres').split(',');
const SETTLE_MS = Number(env('BENCH_SETTLE_SECONDS', '60')) * 1000;
const DELETE_MS = Number(env('BENCH_DELETE_SECONDS', '30')) * 1000;
const LEASE_SECONDS = 15;
const EDGE_KEY = `crash-bench-edge-key-${randomBytes(16).toString('hex')}`;
for (const [name, value] of Object.entries({ TRIALS, FAILOVER_TRIALS, SERVER_KILLS })) {
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name}: expected a whole number, got ${value}`);
}

const log = (line) => process.stderr.write(`[crash] ${line}\n`);
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor((sorted.length - 1) / 2)];
};
const seconds = (ms) => (Number.isFinite(ms) ? (ms / 1000).toFixed(1) : '-');

/** Every item of a collection (`key` is its list field), newest first, 100 a page. */
async function listAll(api, path, key) {
  const items = [];
  for (let cursor; ; ) {
    const page = await api('GET', `${path}?limit=100${cursor ? `&before_id=${cursor}` : ''}`);
    items.push(...page[key]);
    if (!page.next_page_uri || page[key].length === 0) return items;
    cursor = page[key].at(-1).id;
  }
}

/** The credentials' token hashes as edges get them: the first message of the edge feed. */
async function edgeTokenHashes(apiUrl) {
  const abort = new AbortController();
  try {
    const response = await fetch(`${apiUrl}/edge/v1/feed?edge_id=crash-bench&region=us`, {
      headers: { authorization: `Bearer ${EDGE_KEY}` },
      signal: abort.signal,
    });
    if (!response.ok) throw new Error(`edge feed: HTTP ${response.status} ${await response.text()}`);
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of response.body) {
      text += decoder.decode(chunk, { stream: true });
      const newline = text.indexOf('\n');
      if (newline < 0) continue;
      const message = JSON.parse(text.slice(0, newline));
      if (message.type !== 'config') throw new Error(`edge feed: first message is ${message.type}`);
      return new Map(message.config.credentials.map((c) => [c.id, c.token_hash]));
    }
    throw new Error('edge feed ended before its first message');
  } finally {
    abort.abort();
  }
}

// ---------------------------------------------------------------------------------------------
// operator: kills at chosen points

const CREDENTIALS = 'tunnelcredentials.edgeward.dev';
const POLICIES = 'ippolicies.edgeward.dev';

function credentialManifest(namespace, name) {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'TunnelCredential',
    metadata: { name, namespace, labels: { trial: name } },
    spec: { description: `crash ${namespace}/${name}`, acl: [`bind:${name}.crash.example.com`] },
  };
}

function policyManifest(namespace, name) {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'IPPolicy',
    metadata: { name, namespace, labels: { trial: name } },
    spec: { description: `crash ${namespace}/${name}`, rules: [{ cidr: '192.0.2.0/24', action: 'allow' }] },
  };
}

const yamlOf = (items) => items.map((item) => `---\n${JSON.stringify(item)}\n`).join('');

/** `edgeward operator` on `apiUrl`, watching `namespaces`, probes on `probePort`, no metrics. */
function operatorArgs(apiUrl, namespaces, probePort) {
  const flags = { 'api-url': apiUrl, 'watch-namespaces': namespaces, 'metrics-addr': 'off' };
  flags['probe-addr'] = `127.0.0.1:${probePort}`;
  return ['operator', ...Object.entries(flags).flatMap(([flag, value]) => [`--${flag}`, value])];
}

/** The operator under test, its proxies, and how to (re)start and kill it. */
class OperatorUnderTest {
  constructor({ apiProxy, kubeProxy, kubeconfigPath, adminKey, namespaces }) {
    Object.assign(this, { apiProxy, kubeProxy, kubeconfigPath, adminKey, namespaces });
    this.proc = undefined;
  }

  async start() {
    const probePort = await freePort();
    this.proc = startChild(
      'edgeward operator',
      operatorArgs(this.apiProxy.url, this.namespaces.join(','), probePort),
      { KUBECONFIG: this.kubeconfigPath, EDGEWARD_API_KEY: this.adminKey },
    );
    await operatorReady(this.proc, probePort);
  }

  /**
   * Arms one kill: the first answer `match` accepts (on `proxy`) kills the operator, then is dropped
   * ('drop') or forwarded with the kill 0-20 ms later ('late'). Resolves once the operator is dead.
   */
  killOn(proxy, match, mode, timeoutMs = 120_000) {
    const child = this.proc.child;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        proxy.onAnswer = undefined;
        reject(new Error(`no answer matched the kill point within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      proxy.onAnswer = (answer) => {
        if (!match(answer)) return undefined;
        proxy.onAnswer = undefined;
        if (mode === 'drop') {
          child.kill('SIGKILL');
          return 'drop';
        }
        setTimeout(() => child.kill('SIGKILL'), Math.random() * 20);
        return undefined;
      };
    });
  }
}

const isCreate = (collection) => (a) => a.method === 'POST' && a.path === `/${collection}` && a.status < 300;
const isSecretWrite = (namespace) => (a) =>
  ['POST', 'PUT', 'PATCH'].includes(a.method) &&
  a.path.startsWith(`/api/v1/namespaces/${namespace}/secrets`) &&
  a.status < 300;
const isCredentialDelete = (a) =>
  a.method === 'DELETE' && a.path.startsWith('/credentials/') && a.status < 300;

/** What one trial's CRs look like now: the problems counted, by kind of problem. */
async function checkTrial(ctx, namespace, names) {
  const { api, kubectl } = ctx;
  const problems = { duplicates: 0, wrongIds: 0, lostTokens: 0, notReady: 0, details: [] };
  const [credentials, policies, hashes] = await Promise.all([
    listAll(api, '/credentials', 'credentials'),
    listAll(api, '/ip_policies', 'ip_policies'),
    edgeTokenHashes(ctx.apiUrl),
  ]);
  for (const { plural, name, remotes } of names.map((n) => ({
    ...n,
    remotes: (n.plural === CREDENTIALS ? credentials : policies).filter(
      (r) => r.description === `crash ${namespace}/${n.name}`,
    ),
  }))) {
    const cr = JSON.parse(await kubectl(['get', '-n', namespace, plural, name, '-o', 'json']));
    const ready = cr.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status !== 'True' || ready.observedGeneration !== cr.metadata.generation) {
      problems.notReady++;
      problems.details.push(`${name}: not Ready (${ready?.reason}: ${ready?.message})`);
      continue;
    }
    if (remotes.length > 1) {
      problems.duplicates += remotes.length - 1;
      problems.details.push(`${name}: ${remotes.length} server resources: ${remotes.map((r) => r.id)}`);
    }
    if (!remotes.some((r) => r.id === cr.status.id)) {
      problems.wrongIds++;
      problems.details.push(`${name}: status.id ${cr.status.id} is not among ${remotes.map((r) => r.id)}`);
    }
    if (plural !== CREDENTIALS) continue;
    const secretName = cr.status.tokenSecretName ?? `${name}-token`;
    const secret = JSON.parse(
      (await kubectl(['get', '-n', namespace, 'secret', secretName, '-o', 'json', '--ignore-not-found'])) ||
        'null',
    );
    const token = secret?.data?.token ? Buffer.from(secret.data.token, 'base64').toString('utf8') : '';
    const namedId = secret?.metadata?.annotations?.['edgeward.dev/credential-id'];
    if (!secret || token === '' || namedId !== cr.status.id || hashes.get(cr.status.id) !== sha256(token)) {
      problems.lostTokens++;
      problems.details.push(
        `${name}: token lost (Secret ${secret ? `names ${namedId}` : 'missing'}, status.id ${cr.status.id}, ` +
          `token ${token === '' ? 'empty' : hashes.get(cr.status.id) === sha256(token) ? 'valid' : 'does not authenticate'})`,
      );
    }
  }
  return problems;
}

/** Deletes the trial's CRs; counts those still there after DELETE_MS and the server leftovers. */
async function deleteTrial(ctx, namespace, trial) {
  const { api, kubectl } = ctx;
  const selector = ['-n', namespace, `${CREDENTIALS},${POLICIES}`, '-l', `trial=${trial}`];
  await kubectl(['delete', ...selector, '--wait=false']);
  const deadline = Date.now() + DELETE_MS;
  let left = [];
  for (;;) {
    const text = await kubectl(['get', ...selector, '-o', 'name']);
    left = text.split('\n').filter((line) => line !== '');
    if (left.length === 0 || Date.now() > deadline) break;
    await sleep(250);
  }
  // Let the next trial start clean: what is stuck is counted, then its finalizer removed by hand.
  for (const name of left) {
    await kubectl(['patch', '-n', namespace, name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  }
  const description = `crash ${namespace}/${trial}`;
  const [credentials, policies] = await Promise.all([
    listAll(api, '/credentials', 'credentials'),
    listAll(api, '/ip_policies', 'ip_policies'),
  ]);
  const orphans = [
    ...credentials.filter((r) => r.description === description).map((r) => `/credentials/${r.id}`),
    ...policies.filter((r) => r.description === description).map((r) => `/ip_policies/${r.id}`),
  ];
  // Counted, then removed, so the next trial's orphans are its own.
  for (const path of orphans) await api('DELETE', path);
  return { stuck: left, orphans };
}

/** One trial of a point: set up, kill, restart, wait for convergence, check, delete, check. */
async function operatorTrial(ctx, point, index) {
  const { operator, kubectl } = ctx;
  const namespace = `crash-${point}`;
  const trial = `t${index}`;
  const mode =
    Math.floor(index / (point === 'replace' ? 3 : point === 'create' ? 2 : 1)) % 2 ? 'late' : 'drop';
  const names = [{ plural: CREDENTIALS, name: trial }];
  let killed;
  let where;
  if (point === 'create') {
    names.push({ plural: POLICIES, name: trial });
    const collection = index % 2 ? 'ip_policies' : 'credentials';
    where = `POST /${collection}`;
    killed = operator.killOn(ctx.apiProxy, isCreate(collection), mode);
    await kubectl(
      ['apply', '-f', '-'],
      yamlOf([credentialManifest(namespace, trial), policyManifest(namespace, trial)]),
    );
  } else if (point === 'token-secret') {
    where = 'token Secret write';
    killed = operator.killOn(ctx.kubeProxy, isSecretWrite(namespace), mode);
    await kubectl(['apply', '-f', '-'], yamlOf([credentialManifest(namespace, trial)]));
  } else {
    await kubectl(['apply', '-f', '-'], yamlOf([credentialManifest(namespace, trial)]));
    await waitUntil(`${namespace}/${trial} Ready before the replace`, SETTLE_MS, async () =>
      (await readyOf(kubectl, namespace, CREDENTIALS)) === 1 ? true : undefined,
    );
    const step = index % 3;
    where = ['replace: POST /credentials', 'replace: token Secret write', 'replace: DELETE old credential'][
      step
    ];
    killed =
      step === 0
        ? operator.killOn(ctx.apiProxy, isCreate('credentials'), mode)
        : step === 1
          ? operator.killOn(ctx.kubeProxy, isSecretWrite(namespace), mode)
          : operator.killOn(ctx.apiProxy, isCredentialDelete, mode);
    await kubectl(['delete', '-n', namespace, 'secret', `${trial}-token`]);
  }
  await killed;
  const restarted = performance.now();
  await operator.start();
  const serving = performance.now();
  // Converged: every CR Ready and the invariants hold; what still fails at the bound is counted.
  let problems;
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    problems = await checkTrial(ctx, namespace, names);
    const clean = problems.notReady + problems.duplicates + problems.wrongIds + problems.lostTokens === 0;
    if (clean || Date.now() > deadline) break;
    await sleep(500);
  }
  const convergedMs = problems.details.length === 0 ? performance.now() - restarted : Number.NaN;
  // Without the restart itself (tsx compiling the operator, informers listing): the repair alone.
  const repairMs = convergedMs - (serving - restarted);
  const { stuck, orphans } = await deleteTrial(ctx, namespace, trial);
  const outcome = {
    where,
    mode,
    convergedMs,
    repairMs,
    ...problems,
    stuck: stuck.length,
    orphans: orphans.length,
  };
  if (stuck.length) problems.details.push(`stuck finalizers: ${stuck}`);
  if (orphans.length) problems.details.push(`orphans: ${orphans}`);
  log(
    `${point} #${index} (${where}, ${mode}): ${problems.details.length ? problems.details.join('; ') : 'clean'}, converged ${seconds(convergedMs)} s after restart`,
  );
  return outcome;
}

async function operatorPart(work, base) {
  const { cluster, kubectl, pkiDir, apiUrl, adminKey } = base;
  const pki = (file) => readFileSync(join(pkiDir, file));
  const apiProxy = await new KillProxy({ upstream: apiUrl }).start();
  const kubeProxy = await new KillProxy({
    upstream: cluster.server,
    serverTls: { cert: pki('apiserver.crt'), key: pki('apiserver.key') },
    upstreamTls: { ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key') },
  }).start();
  const kubeconfigPath = join(work, 'operator.kubeconfig');
  writeFileSync(
    kubeconfigPath,
    readFileSync(cluster.kubeconfigPath, 'utf8').replace(cluster.server, kubeProxy.url),
    { mode: 0o600 },
  );
  const namespaces = POINTS.map((point) => `crash-${point}`);
  for (const namespace of namespaces) await kubectl(['create', 'namespace', namespace]);
  if (FINALIZER_POLICY) await bindFinalizerPolicy(kubectl, namespaces);
  const operator = new OperatorUnderTest({ apiProxy, kubeProxy, kubeconfigPath, adminKey, namespaces });
  const ctx = { ...base, api: apiClient(apiUrl, adminKey), apiProxy, kubeProxy, operator };
  const rows = [];
  try {
    await operator.start();
    for (const point of POINTS) {
      const outcomes = [];
      for (let index = 0; index < TRIALS; index++) outcomes.push(await operatorTrial(ctx, point, index));
      const sum = (field) => outcomes.reduce((total, o) => total + o[field], 0);
      const times = outcomes.map((o) => o.convergedMs).filter(Number.isFinite);
      const repairs = outcomes.map((o) => o.repairMs).filter(Number.isFinite);
      rows.push({
        point,
        trials: outcomes.length,
        duplicates: sum('duplicates'),
        'wrong ids': sum('wrongIds'),
        'lost tokens': sum('lostTokens'),
        'not Ready': sum('notReady'),
        'stuck finalizers': sum('stuck'),
        orphans: sum('orphans'),
        'ready s p50': seconds(median(times)),
        'ready s max': seconds(Math.max(...times)),
        'after readyz s p50': seconds(median(repairs)),
        load: loadavg(),
      });
      log(`${point}: done`);
    }
  } finally {
    if (operator.proc) await stopChild(operator.proc.child);
    await apiProxy.stop();
    await kubeProxy.stop();
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// failover: two replicas, the leader killed

async function failoverPart(base) {
  const { kubectl, cluster, apiUrl, adminKey } = base;
  const namespace = 'crash-failover';
  const leaseId = 'crash-bench';
  await kubectl(['create', 'namespace', namespace]);
  if (FINALIZER_POLICY) await bindFinalizerPolicy(kubectl, [namespace]);
  const startReplica = async () => {
    const probePort = await freePort();
    const proc = startChild(
      'edgeward operator replica',
      [
        ...operatorArgs(apiUrl, namespace, probePort),
        '--leader-elect',
        '--leader-election-namespace',
        namespace,
        '--leader-election-id',
        leaseId,
      ],
      // info: the "started leading" line names the replica's identity, to find the Lease holder's process.
      { KUBECONFIG: cluster.kubeconfigPath, EDGEWARD_API_KEY: adminKey, LOG_LEVEL: 'info' },
    );
    await waitUntil(
      'replica /healthz',
      180_000,
      async () => (await fetch(`http://127.0.0.1:${probePort}/healthz`)).ok,
      proc,
    );
    return proc;
  };
  const holder = async () =>
    (
      await kubectl(['get', 'lease', '-n', namespace, leaseId, '-o', 'jsonpath={.spec.holderIdentity}'])
    ).trim();
  const replicas = [await startReplica(), await startReplica()];
  const outcomes = [];
  try {
    for (let index = 0; index < FAILOVER_TRIALS; index++) {
      // A settled leader first: it has made the previous CRs Ready.
      const warm = `warm-${index}`;
      await kubectl(['apply', '-f', '-'], yamlOf([policyManifest(namespace, warm)]));
      await waitUntil('the leader to reconcile', 120_000, async () =>
        (await readyOf(kubectl, namespace, POLICIES)) === index * 2 + 1 ? true : undefined,
      );
      const leaderId = await holder();
      const leader = replicas.find((r) => r.output().includes(`"identity":"${leaderId}"`));
      if (!leader) throw new Error(`no replica logged that it leads as ${leaderId}`);
      const killedAt = performance.now();
      leader.child.kill('SIGKILL');
      await kubectl(['apply', '-f', '-'], yamlOf([policyManifest(namespace, `after-${index}`)]));
      let leaseMs;
      let readyMs;
      await waitUntil('the standby to take over and reconcile', 180_000, async () => {
        if (leaseMs === undefined && ![leaderId, ''].includes(await holder()))
          leaseMs = performance.now() - killedAt;
        if (readyMs === undefined && (await readyOf(kubectl, namespace, POLICIES)) === index * 2 + 2)
          readyMs = performance.now() - killedAt;
        return leaseMs !== undefined && readyMs !== undefined ? true : undefined;
      });
      log(
        `failover #${index}: Lease taken after ${seconds(leaseMs)} s, new CR Ready after ${seconds(readyMs)} s`,
      );
      outcomes.push({ leaseMs, readyMs });
      replicas[replicas.indexOf(leader)] = await startReplica();
    }
  } finally {
    for (const replica of replicas) await stopChild(replica.child);
  }
  const leases = outcomes.map((o) => o.leaseMs);
  const readies = outcomes.map((o) => o.readyMs);
  return {
    trials: outcomes.length,
    'lease duration s': LEASE_SECONDS,
    'Lease taken s p50': seconds(median(leases)),
    'Lease taken s max': seconds(Math.max(...leases)),
    'new CR Ready s p50': seconds(median(readies)),
    'new CR Ready s max': seconds(Math.max(...readies)),
    load: loadavg(),
  };
}

// ---------------------------------------------------------------------------------------------
// server: kill -9 under a write load

async function serverPart(work) {
  const rows = [];
  for (const store of STORES) {
    let cluster;
    const args = ['--data-dir', join(work, `server-${store}`), '--rate-limit', '0', '--no-event-delivery'];
    if (store === 'postgres') {
      const binaries = findPostgresBinaries();
      if ('missing' in binaries) {
        log(`skipping PostgreSQL: ${binaries.missing}`);
        continue;
      }
      cluster = await startTestCluster(binaries.dir, log, { durable: true });
      if ('missing' in cluster) {
        log(`skipping PostgreSQL: ${cluster.missing}`);
        continue;
      }
      args.push('--database-url', (await createTestDatabase(cluster.adminUrl)).url);
    } else if (store !== 'sqlite') throw new Error(`BENCH_STORES: ${store} is not sqlite or postgres`);
    const adminKey = `ewk_crash_${randomBytes(16).toString('hex')}`;
    // PostgreSQL's replicas share one sealing key; the same on each restart for SQLite too.
    const serverEnv = {
      EDGEWARD_ADMIN_API_KEY: adminKey,
      EDGEWARD_SECRET_KEY: randomBytes(32).toString('base64'),
    };
    const acknowledged = [];
    let lost = 0;
    let errors = 0;
    try {
      for (let kill = 0; kill < SERVER_KILLS; kill++) {
        const server = await startServer(args, serverEnv);
        let stopped = false;
        // 24 writers, as test/server/process.test.ts: their commits are shared, so the kill lands
        // with some queued, some inside a shared transaction and some waiting for its fsync.
        const writer = async (w) => {
          for (let n = 0; !stopped; n++) {
            try {
              const response = await fetch(`${server.apiUrl}/ip_policies`, {
                method: 'POST',
                headers: {
                  authorization: `Bearer ${adminKey}`,
                  'svc-version': '2',
                  'content-type': 'application/json',
                },
                body: JSON.stringify({ description: `k${kill}-w${w}-${n}` }),
              });
              const body = await response.text();
              if (response.status === 201) acknowledged.push(JSON.parse(body).id);
              else errors++;
            } catch {
              return; // the connection died with the server: not acknowledged
            }
          }
        };
        const writers = Array.from({ length: 24 }, (_, w) => writer(w));
        await sleep(500 + Math.random() * 2500);
        server.child.kill('SIGKILL');
        stopped = true;
        await Promise.all(writers);
        await waitUntil('the killed server to exit', 10_000, async () => exited(server.child));
        // Restarted on the same data: every write acknowledged so far must be there.
        const again = await startServer(args, serverEnv);
        try {
          const stored = new Set(
            (await listAll(apiClient(again.apiUrl, adminKey), '/ip_policies', 'ip_policies')).map(
              (p) => p.id,
            ),
          );
          // Cumulative: a write lost at any kill stays missing, so the last count is the total.
          lost = acknowledged.filter((id) => !stored.has(id)).length;
          log(
            `${store} kill #${kill}: ${acknowledged.length} acknowledged, ${stored.size} stored, ${lost} lost`,
          );
        } finally {
          await stopChild(again.child);
        }
      }
    } finally {
      await cluster?.stop();
    }
    rows.push({
      store,
      kills: SERVER_KILLS,
      acknowledged: acknowledged.length,
      lost,
      'non-2xx': errors,
      load: loadavg(),
    });
  }
  return rows;
}

function printTable(title, rows) {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells) => `| ${cells.map((cell, i) => String(cell).padEnd(widths[i])).join(' | ')} |`;
  process.stdout.write(`\n${title}\n${line(columns)}\n${line(widths.map((w) => '-'.repeat(w)))}\n`);
  for (const row of rows) process.stdout.write(`${line(columns.map((c) => row[c]))}\n`);
}

async function main() {
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'edgeward-bench-crash-'));
  const clusterDir = join(work, 'cluster');
  let clusterUp = false;
  let server;
  try {
    if (PARTS.includes('operator') || PARTS.includes('failover')) {
      clusterUp = true;
      const { cluster, kubectl, pkiDir } = await clusterWithCrds(clusterDir, log);
      const adminKey = `ewk_crash_${randomBytes(16).toString('hex')}`;
      server = await startServer(
        ['--data-dir', join(work, 'server'), '--rate-limit', '0', '--no-event-delivery'],
        {
          EDGEWARD_ADMIN_API_KEY: adminKey,
          EDGEWARD_EDGE_KEY: EDGE_KEY,
        },
      );
      const base = { cluster, kubectl, pkiDir, apiUrl: server.apiUrl, adminKey };
      if (PARTS.includes('operator'))
        printTable(
          `operator kill -9 at chosen points (N=${TRIALS} per point${POLICY_NOTE})`,
          await operatorPart(work, base),
        );
      if (PARTS.includes('failover'))
        printTable(`leader failover (two replicas, leader kill -9${POLICY_NOTE})`, [
          await failoverPart(base),
        ]);
      await stopChild(server.child);
    }
    if (PARTS.includes('server')) printTable('server kill -9 under 24 writers', await serverPart(work));
  } finally {
    for (const child of children) await stopChild(child);
    if (clusterUp) await controlPlaneDown(clusterDir).catch((error) => log(`control plane down: ${error}`));
    rmSync(work, { recursive: true, force: true });
    log(`total wall time ${((Date.now() - started) / 1000).toFixed(0)} s, load ${loadavg()}`);
  }
}

killChildrenOnSignal();

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
});
