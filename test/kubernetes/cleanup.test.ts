import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { condition, OperatorHarness } from '../support/operator-harness.js';
import type { TestServer } from '../support/server.js';

/**
 * `edgeward cleanup`, the ways to take the operator away without objects hanging in Terminating:
 * against a real kube-apiserver, a real server, and the operator as a process (running or not).
 */

const h = new OperatorHarness('cleanup');
const { apply, yamlOf, getCr, eventually, waitFor, waitGone, namespace, suffix } = h;
let t: TestServer;

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
function cleanup(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, 'cleanup', `--namespace=${namespace}`, ...args],
      { env: { ...process.env, KUBECONFIG: inject('kubeconfig') } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const policyExists = async (id: string | undefined) =>
  (await t.api('GET', `/ip_policies/${id}`)).status === 200;

beforeAll(async () => {
  await h.start();
  t = h.t;
});

afterAll(() => h.stop());

describe('edgeward cleanup', () => {
  it('delete: with the operator running, every object and its server resource go', async () => {
    await apply(
      yamlOf('IPPolicy', 'del-a', { description: `del-a-${suffix}` }),
      yamlOf('IPPolicy', 'del-b', { description: `del-b-${suffix}` }),
    );
    const ids = [
      (await waitFor('ippolicies', 'del-a')).status?.id,
      (await waitFor('ippolicies', 'del-b')).status?.id,
    ];
    const run = await cleanup('--mode=delete', '--timeout=60');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`IPPolicy ${namespace}/del-a: deleted`);
    expect(run.stdout).toContain('cleanup delete: 2 objects changed');
    expect(await getCr('ippolicies', 'del-a')).toBeUndefined();
    for (const id of ids) expect(await policyExists(id)).toBe(false);
  });

  it('orphan: every object paused and let go, even with the operator running; deleting it leaves the server alone', async () => {
    await apply(yamlOf('IPPolicy', 'orphan', { description: `orphan-${suffix}` }));
    const id = (await waitFor('ippolicies', 'orphan')).status?.id;
    const run = await cleanup('--mode=orphan');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`IPPolicy ${namespace}/orphan: paused, finalizer removed`);
    const released = await eventually('ippolicies/orphan reported Paused', async () => {
      const cr = await getCr('ippolicies', 'orphan');
      return condition(cr, 'Synced')?.reason === 'Paused' ? cr : undefined;
    });
    // The running operator keeps off a paused object: its finalizer does not come back.
    expect(released.metadata.finalizers ?? []).toEqual([]);
    await h.delete('ippolicies', 'orphan');
    await waitGone('ippolicies', 'orphan');
    expect(await policyExists(id)).toBe(true);
  });

  it('stuck: with the operator gone, objects hanging in Terminating are let go; delete says what is left', async () => {
    await apply(yamlOf('IPPolicy', 'stuck', { description: `stuck-${suffix}` }));
    const id = (await waitFor('ippolicies', 'stuck')).status?.id;
    await h.stopOperator('SIGTERM');
    try {
      // Without the operator, delete cannot finish: it says so, naming what is left.
      const waited = await cleanup('--mode=delete', '--timeout=2');
      expect(waited.code).toBe(1);
      expect(waited.stderr).toContain('1 objects still there after 2 s (is the operator running?)');
      expect(waited.stderr).toContain(`IPPolicy ${namespace}/stuck`);
      const terminating = await getCr('ippolicies', 'stuck');
      expect(terminating?.metadata.finalizers).toEqual(['edgeward.dev/finalizer']);

      const run = await cleanup('--mode=stuck');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`IPPolicy ${namespace}/stuck: finalizer removed`);
      await waitGone('ippolicies', 'stuck');
      expect(await policyExists(id)).toBe(true);
    } finally {
      h.startOperator();
    }
  });

  it('refuses an unknown mode naming the flag', async () => {
    const run = await cleanup('--mode=everything');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--mode: one of stuck, orphan, delete is required');
  });
});
