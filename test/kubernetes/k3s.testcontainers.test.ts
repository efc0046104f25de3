import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ApiException, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { K3sContainer, type StartedK3sContainer } from '@testcontainers/k3s';
import { getContainerRuntimeClient } from 'testcontainers';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { tool } from '../support/kubectl.js';
import { describeUnless } from '../support/skip-reason.js';
import { GROUP, PLURAL, VERSION, WIDGET_CRD, type Widget, widgetIn } from '../support/widget-crd.js';

const K3S_IMAGE = 'rancher/k3s:v1.33.4-k3s1';

/** testcontainers throws when it finds no Docker (or compatible) engine; that decides the suite. */
async function dockerEngine(): Promise<string | undefined> {
  try {
    await getContainerRuntimeClient();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message.split('\n')[0] : String(error);
  }
}

const noEngine = await dockerEngine();
const skipReason = noEngine
  ? `no Docker engine is reachable (${noEngine}); the same checks ran against the local etcd + kube-apiserver control plane`
  : undefined;

describeUnless(skipReason, 'the same checks in a k3s container (testcontainers)', () => {
  let container: StartedK3sContainer;
  let dir: string;
  let kubeconfigPath: string;

  beforeAll(async () => {
    container = await new K3sContainer(K3S_IMAGE).start();
    dir = mkdtempSync(join(tmpdir(), 'edgeward-k3s-'));
    kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, container.getKubeConfig(), { mode: 0o600 });
  }, 300_000);

  afterAll(async () => {
    await container?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('applies the CRD, creates a custom resource, updates its status and rejects bad objects', async () => {
    await tool(inject('kubectl'), kubeconfigPath, ['apply', '-f', '-'], WIDGET_CRD);
    await tool(inject('kubectl'), kubeconfigPath, [
      'wait',
      '--for=condition=Established',
      `crd/${PLURAL}.${GROUP}`,
    ]);
    const config = new KubeConfig();
    config.loadFromFile(kubeconfigPath);
    const custom = config.makeApiClient(CustomObjectsApi);
    const created = (await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: 'default',
      plural: PLURAL,
      body: widgetIn('default', 'k3s', { size: 2 }),
    })) as Widget;
    const updated = (await custom.replaceNamespacedCustomObjectStatus({
      group: GROUP,
      version: VERSION,
      namespace: 'default',
      plural: PLURAL,
      name: 'k3s',
      body: { ...created, status: { id: 'wdg_k3s', observedGeneration: 1 } },
    })) as Widget;
    expect(updated.status?.id).toBe('wdg_k3s');
    const rejected = await custom
      .createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: 'default',
        plural: PLURAL,
        body: widgetIn('default', 'bad', { size: 2, minSize: 5 }),
      })
      .catch((error: ApiException<string>) => error);
    expect((rejected as ApiException<string>).code).toBe(422);
  });
});
