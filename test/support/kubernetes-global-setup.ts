import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { controlPlaneDown, controlPlaneUp } from '../../src/dev-cluster/control-plane.js';
import { ensureTools } from '../../src/dev-cluster/tools.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    /** Folder of the control plane this run started; empty when KUBECONFIG was given. */
    devClusterDir: string;
    kubectl: string;
    helm: string;
    /** Runs Argo CD health scripts with Argo CD's Lua (gopher-lua). */
    argocdLua: string;
  }
}

const log = (line: string) => process.stderr.write(`[kubernetes setup] ${line}\n`);

/**
 * One control plane for the whole run: tests make their own namespaces. With KUBECONFIG set, that
 * cluster is used as it is and nothing is started or stopped.
 */
export default async function setup(project: TestProject) {
  const tools = await ensureTools(['kubectl', 'helm', 'argocd-lua'], log);
  project.provide('kubectl', tools.kubectl);
  project.provide('helm', tools.helm);
  project.provide('argocdLua', tools['argocd-lua']);
  if (process.env.KUBECONFIG) {
    log(`using the existing cluster of KUBECONFIG=${process.env.KUBECONFIG}`);
    project.provide('kubeconfig', process.env.KUBECONFIG);
    project.provide('devClusterDir', '');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'edgeward-kube-'));
  const started = Date.now();
  const plane = await controlPlaneUp(dir, log);
  log(`started in ${Math.round((Date.now() - started) / 1000)} s`);
  project.provide('kubeconfig', plane.kubeconfigPath);
  project.provide('devClusterDir', dir);
  const teardown = () => controlPlaneDown(dir);
  // A run interrupted with Ctrl-C still stops its etcd and kube-apiserver.
  process.once('SIGINT', () => void teardown().finally(() => process.exit(130)));
  return teardown;
}
