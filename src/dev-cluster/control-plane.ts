import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { issueCertificate } from '../crypto/x509.js';
import { processAlive } from '../lib/process-alive.js';
import { freePort } from './free-port.js';
import { kubeconfig } from './kubeconfig.js';
import { createPki, loadCa } from './pki.js';
import { ensureTools, type Log } from './tools.js';

export interface ControlPlane {
  dir: string;
  /** https://127.0.0.1:<port> */
  server: string;
  kubeconfigPath: string;
  pids: { etcd: number; apiserver: number };
}

const STATE_FILE = 'control-plane.json';

/** Starts a process that outlives this one (so `up` can return), its output in a log file. */
function startDetached(binary: string, args: string[], logFile: string): number {
  const out = openSync(logFile, 'a');
  const child = spawn(binary, args, { detached: true, stdio: ['ignore', out, out] });
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start ${binary}`);
  return child.pid;
}

async function waitFor(
  what: string,
  timeoutMs: number,
  logFile: string,
  pid: number,
  check: () => Promise<boolean>,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!processAlive(pid)) {
      throw new Error(`${what} exited during start-up; last lines of ${logFile}:\n${tail(logFile)}`);
    }
    try {
      if (await check()) return;
    } catch {
      // Not listening yet.
    }
    await sleep(250);
  }
  throw new Error(
    `${what} was not ready within ${timeoutMs / 1000} s; last lines of ${logFile}:\n${tail(logFile)}`,
  );
}

function tail(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-25).join('\n') : '(no log)';
}

/**
 * Starts etcd and kube-apiserver on free loopback ports with envtest-like flags, waits for
 * /readyz and the `default` namespace, writes DIR/kubeconfig, and returns with both running.
 */
export async function controlPlaneUp(dirArg: string, log: Log = () => {}): Promise<ControlPlane> {
  const dir = resolve(dirArg);
  if (existsSync(join(dir, STATE_FILE))) {
    throw new Error(
      `${dir} already holds a control plane; run 'edgeward dev-cluster down --dir ${dirArg}' first`,
    );
  }
  const tools = await ensureTools(['etcd', 'kube-apiserver'], log);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pki = await createPki(dir);
  const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];

  const etcdLog = join(dir, 'etcd.log');
  const etcdUrl = `http://127.0.0.1:${etcdClient}`;
  const etcd = startDetached(
    tools.etcd,
    [
      `--data-dir=${join(dir, 'etcd-data')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      // A throwaway test store: durability across power loss is not worth the fsync latency.
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
    etcdLog,
  );
  const state: ControlPlane = {
    dir,
    server: `https://127.0.0.1:${apiPort}`,
    kubeconfigPath: join(dir, 'kubeconfig'),
    pids: { etcd, apiserver: 0 },
  };
  writeFileSync(join(dir, STATE_FILE), JSON.stringify(state, null, 2));
  try {
    await waitFor('etcd', 30_000, etcdLog, etcd, async () => {
      const response = await request(`${etcdUrl}/health`);
      return response.statusCode === 200 && (await response.body.text()).includes('true');
    });

    const apiLog = join(dir, 'kube-apiserver.log');
    state.pids.apiserver = startDetached(
      tools['kube-apiserver'],
      [
        `--etcd-servers=${etcdUrl}`,
        `--secure-port=${apiPort}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--cert-dir=${join(dir, 'apiserver-certs')}`,
        `--tls-cert-file=${pki.servingCertFile}`,
        `--tls-private-key-file=${pki.servingKeyFile}`,
        `--client-ca-file=${pki.caFile}`,
        `--service-account-key-file=${pki.serviceAccountPublicFile}`,
        `--service-account-signing-key-file=${pki.serviceAccountKeyFile}`,
        '--service-account-issuer=https://kubernetes.default.svc',
        '--authorization-mode=RBAC',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        // As envtest: no controller-manager mints service-account tokens, so do not require them.
        '--disable-admission-plugins=ServiceAccount',
        '--v=1',
      ],
      apiLog,
    );
    writeFileSync(join(dir, STATE_FILE), JSON.stringify(state, null, 2));
    const agent = new Agent({
      connect: { ca: pki.ca.certificatePem, cert: pki.admin.certificatePem, key: pki.admin.privateKeyPem },
    });
    try {
      await waitFor('kube-apiserver', 90_000, apiLog, state.pids.apiserver, async () => {
        const ready = await request(`${state.server}/readyz`, { dispatcher: agent });
        await ready.body.dump();
        if (ready.statusCode !== 200) return false;
        const namespace = await request(`${state.server}/api/v1/namespaces/default`, { dispatcher: agent });
        await namespace.body.dump();
        return namespace.statusCode === 200;
      });
    } finally {
      await agent.close();
    }
    writeFileSync(
      state.kubeconfigPath,
      kubeconfig(state.server, pki.ca.certificatePem, { name: 'edgeward-admin', ...pki.admin }),
      { mode: 0o600 },
    );
    log(`control plane ready at ${state.server}; export KUBECONFIG=${state.kubeconfigPath}`);
    return state;
  } catch (error) {
    await controlPlaneDown(dir);
    throw error;
  }
}

/** The state of the control plane in DIR, or undefined when none was started there. */
export function readControlPlane(dirArg: string): ControlPlane | undefined {
  const file = join(resolve(dirArg), STATE_FILE);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ControlPlane) : undefined;
}

/** A pid is only ours if its command line still names our folder: pids are reused. */
function ownedBy(pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir);
  } catch {
    // No /proc (macOS): trust the recorded pid if the process is alive.
    return processAlive(pid);
  }
}

async function stop(pid: number, dir: string): Promise<void> {
  if (!pid || !processAlive(pid) || !ownedBy(pid, dir)) return;
  process.kill(pid, 'SIGTERM');
  for (let waited = 0; waited < 10_000 && processAlive(pid); waited += 100) await sleep(100);
  if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  for (let waited = 0; waited < 5_000 && processAlive(pid); waited += 100) await sleep(100);
}

/** Stops exactly the processes started for DIR (apiserver, then etcd) and removes the folder. */
export async function controlPlaneDown(dirArg: string): Promise<void> {
  const dir = resolve(dirArg);
  const state = readControlPlane(dir);
  if (state) {
    await stop(state.pids.apiserver, dir);
    await stop(state.pids.etcd, dir);
  }
  rmSync(dir, { recursive: true, force: true });
}

/**
 * A kubeconfig for a non-admin user (client certificate CN=user, O=groups), so tests can run the
 * operator under exactly the RBAC the Helm chart grants.
 */
export async function mintUser(dirArg: string, user: string, groups: string[] = []): Promise<string> {
  const dir = resolve(dirArg);
  const state = readControlPlane(dir);
  if (!state) throw new Error(`no control plane in ${dir}`);
  const ca = loadCa(dir);
  const client = await issueCertificate({
    commonName: user,
    organizations: groups,
    validDays: 30,
    usages: ['client'],
    issuer: ca,
  });
  mkdirSync(join(dir, 'users'), { recursive: true, mode: 0o700 });
  const path = join(dir, 'users', `${user.replace(/[^A-Za-z0-9_.-]/g, '_')}.kubeconfig`);
  writeFileSync(path, kubeconfig(state.server, ca.certificatePem, { name: user, ...client }), {
    mode: 0o600,
  });
  return path;
}
