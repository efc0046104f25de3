import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureTools } from '../../src/dev-cluster/tools.js';
import { waitFor } from './eventually.js';
import { tool } from './kubectl.js';

/**
 * cert-manager's controller, run out of cluster against a kube-apiserver (the test control plane
 * or `KUBECONFIG`'s cluster), built from its Go module through
 * src/dev-cluster/go-modules/cert-manager-controller (no Venafi, no leader election, no metrics
 * or webhook: see its main.go). Its CRDs are the release's, applied server-side (three are too
 * big for the last-applied annotation of a client-side apply).
 *
 * What it cannot do on the plain control plane: run HTTP-01 solver pods (there is no node), and
 * its HTTP-01 self-check always asks port 80 of the name, whatever port the ACME server validates
 * on. An ACME Issuer trusts Pebble with `spec.acme.caBundle` (base64 of `Pebble.caBundlePem`).
 */

export interface CertManagerOptions {
  kubeconfig: string;
  /** The one namespace it watches (the clusterissuers controller is then off). */
  namespace: string;
  /** More flags of go-modules/cert-manager-controller, e.g. `--acme-http01-solver-nameservers=...`. */
  args?: string[];
}

export interface CertManager {
  /** The folder of the release's CRD files. */
  crdsDir: string;
  /** The controller's output so far (the last 256 KiB). */
  output(): string;
  stop(): Promise<void>;
}

const CRD_NAMES = [
  'certificaterequests.cert-manager.io',
  'certificates.cert-manager.io',
  'challenges.acme.cert-manager.io',
  'clusterissuers.cert-manager.io',
  'issuers.cert-manager.io',
  'orders.acme.cert-manager.io',
];

/** Applies cert-manager's CRDs and waits until the apiserver serves them; idempotent. */
export async function applyCertManagerCrds(kubeconfig: string): Promise<string> {
  const tools = await ensureTools(['kubectl', 'cert-manager-crds']);
  const crdsDir = tools['cert-manager-crds'];
  const files = readdirSync(crdsDir).filter((file) => file.endsWith('.yaml'));
  await tool(tools.kubectl, kubeconfig, [
    'apply',
    '--server-side',
    '--field-manager=edgeward-tests',
    ...files.flatMap((file) => ['-f', join(crdsDir, file)]),
  ]);
  await tool(tools.kubectl, kubeconfig, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...CRD_NAMES.map((name) => `crd/${name}`),
  ]);
  return crdsDir;
}

/**
 * Applies the CRDs, starts the controller for `namespace` and waits until its controllers run.
 * `stop()` ends the process (SIGTERM, then SIGKILL after 10 s); the CRDs stay.
 */
export async function startCertManager(options: CertManagerOptions): Promise<CertManager> {
  const crdsDir = await applyCertManagerCrds(options.kubeconfig);
  const tools = await ensureTools(['cert-manager-controller']);
  const child: ChildProcess = spawn(
    tools['cert-manager-controller'],
    [
      `--kubeconfig=${options.kubeconfig}`,
      `--namespace=${options.namespace}`,
      `--cluster-resource-namespace=${options.namespace}`,
      '--leader-elect=false',
      '--enable-certificate-owner-ref=true',
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-256 * 1024);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  // A test process that dies without stop() (an uncaught error) leaves no controller behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    process.off('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    if ((await Promise.race([exited, sleep(10_000).then(() => 'timeout')])) === 'timeout') {
      child.kill('SIGKILL');
      await exited;
    }
  };
  await waitFor(
    () => {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`cert-manager-controller exited (${child.exitCode ?? child.signalCode}):\n${output}`);
      return output.includes('controllers started');
    },
    { what: 'cert-manager-controller to start', timeoutMs: 30_000, intervalMs: 100, detail: () => output },
  ).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { crdsDir, output: () => output, stop };
}
