import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { controlPlaneDown, controlPlaneUp } from '../../src/dev-cluster/control-plane.js';
import { ensureTools } from '../../src/dev-cluster/tools.js';
import {
  createEndpointNetwork,
  type EndpointNetwork,
  endpointNetworkUnavailable,
} from '../../src/lib/endpoint-network.js';
import { applyGatewayApiCrds } from './gateway-api.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    /** Folder of the control plane this run started; empty when KUBECONFIG was given. */
    devClusterDir: string;
    kubectl: string;
    helm: string;
    /** Runs Argo CD health scripts with Argo CD's Lua (gopher-lua). */
    argocdLua: string;
    /**
     * The address the tests' local "pods" listen on and their EndpointSlices name: the root end of
     * this run's veth pair (src/lib/endpoint-network.ts; cluster-services.ts). Empty when there is
     * none, and then endpointSkipReason says why.
     */
    endpointAddress: string;
    endpointSkipReason: string;
  }
}

const log = (line: string) => process.stderr.write(`[kubernetes setup] ${line}\n`);

/** The run's endpoint network, or why there is none (no root, no `ip`, or `ip` failed). */
function endpointNetwork(project: TestProject): EndpointNetwork | undefined {
  let network: EndpointNetwork | undefined;
  let skipReason = endpointNetworkUnavailable();
  if (skipReason === undefined) {
    try {
      network = createEndpointNetwork();
    } catch (error) {
      skipReason = (error as Error).message;
    }
  }
  for (const leftover of network?.leftoversRemoved ?? []) log(`removed ${leftover}, left by a killed run`);
  if (network)
    log(`endpoint address ${network.address} (veth ${network.link}, its peer in netns ${network.namespace})`);
  else log(`no endpoint address: ${skipReason}`);
  project.provide('endpointAddress', network?.address ?? '');
  project.provide('endpointSkipReason', skipReason ?? '');
  return network;
}

/** The Gateway API CRDs, for every file (test/support/gateway-api.ts). */
async function gatewayApiCrds(kubeconfig: string): Promise<void> {
  const started = Date.now();
  await applyGatewayApiCrds(kubeconfig, log);
  log(`Gateway API CRDs applied in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/**
 * One control plane for the whole run: tests make their own namespaces. With KUBECONFIG set, that
 * cluster is used as it is and nothing is started or stopped. Either way the Gateway API CRDs are
 * applied (server-side, additive; never removed), and one endpoint network
 * (a veth pair and a network namespace) for the Services whose "pods" are servers of the tests.
 */
export default async function setup(project: TestProject) {
  const tools = await ensureTools(['kubectl', 'helm', 'argocd-lua'], log);
  project.provide('kubectl', tools.kubectl);
  project.provide('helm', tools.helm);
  project.provide('argocdLua', tools['argocd-lua']);
  const network = endpointNetwork(project);
  if (process.env.KUBECONFIG) {
    log(`using the existing cluster of KUBECONFIG=${process.env.KUBECONFIG}`);
    project.provide('kubeconfig', process.env.KUBECONFIG);
    project.provide('devClusterDir', '');
    try {
      await gatewayApiCrds(process.env.KUBECONFIG);
    } catch (error) {
      network?.remove();
      throw error;
    }
    return () => network?.remove();
  }
  const dir = mkdtempSync(join(tmpdir(), 'edgeward-kube-'));
  const started = Date.now();
  let plane: Awaited<ReturnType<typeof controlPlaneUp>>;
  try {
    plane = await controlPlaneUp(dir, log);
  } catch (error) {
    network?.remove();
    throw error;
  }
  log(`started in ${Math.round((Date.now() - started) / 1000)} s`);
  project.provide('kubeconfig', plane.kubeconfigPath);
  project.provide('devClusterDir', dir);
  const teardown = async () => {
    network?.remove();
    await controlPlaneDown(dir);
  };
  try {
    await gatewayApiCrds(plane.kubeconfigPath);
  } catch (error) {
    await teardown();
    throw error;
  }
  // A run interrupted with Ctrl-C still stops its etcd and kube-apiserver (and removes its network).
  process.once('SIGINT', () => void teardown().finally(() => process.exit(130)));
  return teardown;
}
