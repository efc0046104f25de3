import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ensureGeneratedKeys } from '../../src/operator/generated-keys/ensure-keys.js';
import { KubeApi } from '../../src/operator/runtime/kube-api.js';
import { tool } from '../support/kubectl.js';

/**
 * `edgeward ensure-keys`, the chart's hook that makes the keys nobody gave it, against a real
 * kube-apiserver: a key is made once and never changed, whoever races for it.
 */

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const namespace = `edgeward-keys-${randomBytes(3).toString('hex')}`;
const kubectl = (args: string[], input?: string) =>
  tool(inject('kubectl'), inject('kubeconfig'), args, input);
const cli = (...args: string[]) =>
  run(process.execPath, ['--import', 'tsx', CLI, 'ensure-keys', `--namespace=${namespace}`, ...args], {
    env: { ...process.env, KUBECONFIG: inject('kubeconfig') },
  });

interface Secret {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
}
const secret = async (name: string) =>
  JSON.parse((await kubectl(['get', 'secret', '-n', namespace, name, '-o', 'json'])).stdout) as Secret;
const decoded = (value: string | undefined) => Buffer.from(value ?? '', 'base64').toString();

let kube: KubeApi;

beforeAll(async () => {
  await kubectl(['create', 'namespace', namespace]);
  const config = new KubeConfig();
  config.loadFromFile(inject('kubeconfig'));
  kube = new KubeApi(config);
});

afterAll(async () => {
  kube?.close();
  await kubectl(['delete', 'namespace', namespace, '--wait=false']).catch(() => undefined);
});

describe('edgeward ensure-keys', () => {
  it('creates each Secret once with its label and a random key; a second run changes nothing', async () => {
    const args = [
      '--secret=admin/admin-api-key=ewk_',
      '--secret=edge/edge-key=ewedge_',
      '--label=team=platform',
    ];
    const first = await cli(...args);
    expect(first.stdout).toBe(
      `secret ${namespace}/admin key admin-api-key: created\nsecret ${namespace}/edge key edge-key: created\n`,
    );
    const admin = await secret('admin');
    const adminKey = decoded(admin.data?.['admin-api-key']);
    expect(adminKey).toMatch(/^ewk_[A-Za-z0-9_-]{43}$/);
    expect(decoded((await secret('edge')).data?.['edge-key'])).toMatch(/^ewedge_[A-Za-z0-9_-]{43}$/);
    expect(admin.metadata.labels).toEqual({ team: 'platform' });
    // The values are never printed.
    expect(first.stdout + first.stderr).not.toContain(adminKey);

    const second = await cli(...args);
    expect(second.stdout).toBe(
      `secret ${namespace}/admin key admin-api-key: kept\nsecret ${namespace}/edge key edge-key: kept\n`,
    );
    expect(decoded((await secret('admin')).data?.['admin-api-key'])).toBe(adminKey);
  });

  it('adds a missing key to an existing Secret and leaves its other data alone', async () => {
    await kubectl(['create', 'secret', 'generic', 'shared', '-n', namespace, '--from-literal=other=mine']);
    expect((await cli('--secret=shared/admin-api-key=ewk_')).stdout).toContain('admin-api-key: added');
    const shared = await secret('shared');
    expect(decoded(shared.data?.other)).toBe('mine');
    expect(decoded(shared.data?.['admin-api-key'])).toMatch(/^ewk_/);
  });

  it('tells Helm to keep a Secret an earlier chart rendered, so the upgrade that stops rendering it keeps it', async () => {
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: 'rendered',
          namespace,
          annotations: { 'meta.helm.sh/release-name': 'old', 'meta.helm.sh/release-namespace': namespace },
        },
        data: {
          'admin-api-key': Buffer.from('ewk_rendered-by-an-earlier-chart-0123456789').toString('base64'),
        },
      }),
    );
    expect((await cli('--secret=rendered/admin-api-key=ewk_')).stdout).toContain('admin-api-key: kept');
    const rendered = await secret('rendered');
    expect(decoded(rendered.data?.['admin-api-key'])).toBe('ewk_rendered-by-an-earlier-chart-0123456789');
    expect(rendered.metadata.annotations).toMatchObject({ 'helm.sh/resource-policy': 'keep' });
  });

  it('racing runs agree on one value', async () => {
    const keys = [{ name: 'raced', key: 'edge-key', prefix: 'ewedge_' }];
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, () => ensureGeneratedKeys(kube, namespace, keys, {})),
    );
    const kinds = outcomes.map(([outcome]) => outcome?.outcome);
    expect(kinds.filter((kind) => kind === 'created')).toHaveLength(1);
    expect(kinds.filter((kind) => kind !== 'created').every((kind) => kind === 'kept')).toBe(true);
    const value = decoded((await secret('raced')).data?.['edge-key']);
    expect(value).toMatch(/^ewedge_/);
    // A later run still finds the same one.
    await ensureGeneratedKeys(kube, namespace, keys, {});
    expect(decoded((await secret('raced')).data?.['edge-key'])).toBe(value);
  });

  it('refuses a malformed --secret naming the flag, and writes nothing', async () => {
    const failure = await cli('--secret=Not_A_Name').catch(
      (error: { stderr: string; code: number }) => error,
    );
    expect(failure).toMatchObject({ code: 2 });
    expect((failure as { stderr: string }).stderr).toContain("--secret: 'Not_A_Name' is not NAME/KEY=PREFIX");
  });
});
