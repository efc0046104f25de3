import { randomBytes } from 'node:crypto';
import {
  type ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  RbacAuthorizationV1Api,
  Watch,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mintUser } from '../../src/dev-cluster/control-plane.js';
import { eventually } from '../support/eventually.js';
import { tool } from '../support/kubectl.js';
import { GROUP, PLURAL, VERSION, WIDGET_CRD, type Widget, widgetIn } from '../support/widget-crd.js';

let kubeconfigPath: string;
let config: KubeConfig;
let core: CoreV1Api;
let custom: CustomObjectsApi;
const namespace = `edgeward-test-${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  kubeconfigPath = inject('kubeconfig');
  config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  core = config.makeApiClient(CoreV1Api);
  custom = config.makeApiClient(CustomObjectsApi);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
});

afterAll(async () => {
  await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
});

const widget = (name: string, spec: Widget['spec']): Widget => widgetIn(namespace, name, spec);

/** The human message of a Kubernetes Status error body. */
function statusMessage(error: ApiException<string> | undefined): string {
  return (JSON.parse(error?.body ?? '{}') as { message?: string }).message ?? '';
}

describe('the test control plane (real etcd + kube-apiserver)', () => {
  it('runs the cached kubectl and helm', async () => {
    const kubectl = await tool(inject('kubectl'), kubeconfigPath, ['version', '-o', 'json']);
    const versions = JSON.parse(kubectl.stdout) as {
      clientVersion: { gitVersion: string };
      serverVersion: { gitVersion: string };
    };
    expect(versions.clientVersion.gitVersion).toMatch(/^v1\.\d+\.\d+$/);
    expect(versions.serverVersion.gitVersion).toBe(versions.clientVersion.gitVersion);
    const helm = await tool(inject('helm'), kubeconfigPath, ['version', '--short']);
    expect(helm.stdout).toMatch(/^v3\.\d+\.\d+/);
  });

  it('applies a CRD with kubectl, then creates, watches and updates the status of a custom resource', async () => {
    await tool(inject('kubectl'), kubeconfigPath, ['apply', '-f', '-'], WIDGET_CRD);
    await tool(inject('kubectl'), kubeconfigPath, [
      'wait',
      '--for=condition=Established',
      `crd/${PLURAL}.${GROUP}`,
      '--timeout=60s',
    ]);

    const events: Array<{ type: string; widget: Widget }> = [];
    let watchEnded: unknown;
    const watch = new Watch(config);
    // A new CRD's watch cache takes a moment to initialise; until then watches get 429, which real
    // controllers retry, so this does too.
    let aborter: AbortController | undefined;
    for (let attempt = 0; attempt < 60; attempt++) {
      watchEnded = undefined;
      aborter = await watch.watch(
        `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
        {},
        (type, object: Widget) => events.push({ type, widget: object }),
        (error: unknown) => {
          watchEnded = error ?? 'closed';
        },
      );
      if (watchEnded === undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(watchEnded, 'the watch should be open').toBeUndefined();
    try {
      const created = (await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        body: widget('first', { size: 3, colour: 'red' }),
      })) as Widget;
      expect(created.metadata.generation).toBe(1);

      const withStatus = { ...created, status: { id: 'wdg_123', observedGeneration: 1 } };
      const updated = (await custom.replaceNamespacedCustomObjectStatus({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name: 'first',
        body: withStatus,
      })) as Widget;
      expect(updated.status).toEqual({ id: 'wdg_123', observedGeneration: 1 });
      // A status write does not bump the generation: only spec changes do.
      expect(updated.metadata.generation).toBe(1);

      await eventually(
        async () => events.some((e) => e.type === 'MODIFIED' && e.widget.status?.id),
        (seen) => seen,
        10_000,
      );
      expect(events.map((e) => e.type).slice(0, 2), `watch ended: ${String(watchEnded)}`).toEqual([
        'ADDED',
        'MODIFIED',
      ]);
      expect(events.find((e) => e.type === 'MODIFIED')?.widget.status?.id).toBe('wdg_123');
    } finally {
      aborter?.abort();
    }
  });

  it('rejects bad objects on the server with a clear message (schema and CEL)', async () => {
    const attempt = (name: string, spec: Widget['spec']) =>
      custom
        .createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          body: widget(name, spec),
        })
        .then(
          () => undefined,
          (error: ApiException<string>) => error,
        );
    const tooBig = await attempt('too-big', { size: 100 });
    expect(tooBig?.code).toBe(422);
    expect(tooBig?.body).toContain(
      'spec.size: Invalid value: 100: spec.size in body should be less than or equal to 10',
    );
    const badEnum = await attempt('bad-enum', { size: 1, colour: 'green' });
    expect(badEnum?.code).toBe(422);
    expect(statusMessage(badEnum)).toContain('Unsupported value: "green"');
    const cel = await attempt('cel', { size: 2, minSize: 5 });
    expect(cel?.code).toBe(422);
    expect(statusMessage(cel)).toContain('minSize must not exceed size');
  });

  it('mints a non-admin user that RBAC governs', async () => {
    const devClusterDir = inject('devClusterDir');
    if (!devClusterDir) return; // An existing cluster (KUBECONFIG) has its own users.
    const user = `reader-${randomBytes(2).toString('hex')}`;
    const userConfig = new KubeConfig();
    userConfig.loadFromFile(await mintUser(devClusterDir, user, ['edgeward-test']));
    const asUser = userConfig.makeApiClient(CoreV1Api);
    const denied = await asUser
      .listNamespacedSecret({ namespace })
      .catch((error: ApiException<string>) => error);
    expect((denied as ApiException<string>).code).toBe(403);
    expect(statusMessage(denied as ApiException<string>)).toContain(
      `User "${user}" cannot list resource "secrets"`,
    );

    const rbac = config.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'secret-reader' },
        rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'secret-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'secret-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'edgeward-test' }],
      },
    });
    const allowed = await asUser.listNamespacedSecret({ namespace });
    expect(Array.isArray(allowed.items)).toBe(true);
  });
});
