import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Agent, request } from 'undici';
import { issueCertificate } from '../crypto/x509.js';
import { freePort } from './free-port.js';
import { kubeconfig } from './kubeconfig.js';
import { createPki, loadCa } from './pki.js';
import { startDetached, stopOwned, waitFor } from './processes.js';
import { ensureTools, type Log } from './tools.js';

export interface ControlPlane {
  dir: string;
  /** https://127.0.0.1:<port> */
  server: string;
  kubeconfigPath: string;
  pids: { etcd: number; apiserver: number };
  /** Set up to serve a node (`up --node`). */
  forNode?: boolean;
}

export interface ControlPlaneOptions {
  /**
   * The one address kube-apiserver listens on and advertises: loopback by default, a node's
   * bridge address so its pods reach it too (the `kubernetes` Service's endpoint).
   */
  address?: string;
  /**
   * Serve a node: the Node authorizer and NodeRestriction for its kubelet, service-account tokens
   * in pods, a client certificate for kubelets' logs and exec, reached by the node's InternalIP.
   */
  forNode?: boolean;
}

/** The `kubernetes` Service's ClusterIP: the first address of the service range. */
export const SERVICE_CIDR = '10.244.78.0/24';
export const KUBERNETES_SERVICE_IP = '10.244.78.1';

const STATE_FILE = 'control-plane.json';

/**
 * Starts etcd and kube-apiserver on free loopback ports with envtest-like flags, waits for
 * /readyz and the `default` namespace, writes DIR/kubeconfig, and returns with both running.
 */
export async function controlPlaneUp(
  dirArg: string,
  log: Log = () => {},
  options: ControlPlaneOptions = {},
): Promise<ControlPlane> {
  const address = options.address ?? '127.0.0.1';
  const dir = resolve(dirArg);
  if (existsSync(join(dir, STATE_FILE))) {
    throw new Error(
      `${dir} already holds a control plane; run 'edgeward dev-cluster down --dir ${dirArg}' first`,
    );
  }
  const tools = await ensureTools(['etcd', 'kube-apiserver'], log);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pki = await createPki(dir, {
    servingIps: options.forNode ? [address, KUBERNETES_SERVICE_IP] : [address],
    kubeletClient: options.forNode,
  });
  const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];

  const etcdLog = join(dir, 'etcd.log');
  const etcdUrl = `https://127.0.0.1:${etcdClient}`;
  const etcd = startDetached(
    tools.etcd,
    [
      `--data-dir=${join(dir, 'etcd-data')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      `--cert-file=${pki.etcd.servingCertFile}`,
      `--key-file=${pki.etcd.servingKeyFile}`,
      '--client-cert-auth',
      `--trusted-ca-file=${pki.caFile}`,
      // A throwaway test store: durability across power loss is not worth the fsync latency.
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
    etcdLog,
  );
  const state: ControlPlane = {
    dir,
    server: `https://${address}:${apiPort}`,
    kubeconfigPath: join(dir, 'kubeconfig'),
    pids: { etcd, apiserver: 0 },
    forNode: options.forNode,
  };
  writeFileSync(join(dir, STATE_FILE), JSON.stringify(state, null, 2));
  try {
    const etcdAgent = new Agent({
      connect: {
        ca: pki.ca.certificatePem,
        cert: readFileSync(pki.etcd.clientCertFile, 'utf8'),
        key: readFileSync(pki.etcd.clientKeyFile, 'utf8'),
      },
    });
    try {
      await waitFor('etcd', 30_000, etcdLog, etcd, async () => {
        const response = await request(`${etcdUrl}/health`, { dispatcher: etcdAgent });
        return response.statusCode === 200 && (await response.body.text()).includes('true');
      });
    } finally {
      await etcdAgent.close();
    }

    const apiLog = join(dir, 'kube-apiserver.log');
    state.pids.apiserver = startDetached(
      tools['kube-apiserver'],
      [
        `--etcd-servers=${etcdUrl}`,
        `--etcd-cafile=${pki.caFile}`,
        `--etcd-certfile=${pki.etcd.clientCertFile}`,
        `--etcd-keyfile=${pki.etcd.clientKeyFile}`,
        `--secure-port=${apiPort}`,
        `--bind-address=${address}`,
        `--advertise-address=${address}`,
        `--cert-dir=${join(dir, 'apiserver-certs')}`,
        `--tls-cert-file=${pki.servingCertFile}`,
        `--tls-private-key-file=${pki.servingKeyFile}`,
        `--client-ca-file=${pki.caFile}`,
        `--service-account-key-file=${pki.serviceAccountPublicFile}`,
        `--service-account-signing-key-file=${pki.serviceAccountKeyFile}`,
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        '--allow-privileged=true',
        ...(options.forNode && pki.kubeletClient
          ? [
              '--authorization-mode=Node,RBAC',
              '--enable-admission-plugins=NodeRestriction',
              `--kubelet-client-certificate=${pki.kubeletClient.certFile}`,
              `--kubelet-client-key=${pki.kubeletClient.keyFile}`,
              // The node's name is no DNS name here: reach its kubelet by address.
              '--kubelet-preferred-address-types=InternalIP',
            ]
          : [
              '--authorization-mode=RBAC',
              // As envtest: no controller-manager mints service-account tokens, so do not require them.
              '--disable-admission-plugins=ServiceAccount',
            ]),
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

/** Stops exactly the processes started for DIR (apiserver, then etcd) and removes the folder. */
export async function controlPlaneDown(dirArg: string): Promise<void> {
  const dir = resolve(dirArg);
  const state = readControlPlane(dir);
  if (state) {
    await stopOwned(state.pids.apiserver, dir);
    await stopOwned(state.pids.etcd, dir);
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
