import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const cli = (...args: string[]) =>
  run(process.execPath, ['--import', 'tsx', CLI, ...args], { env: process.env });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const parent = mkdtempSync(join(tmpdir(), 'edgeward-cli-cluster-'));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

describe('edgeward dev-cluster', () => {
  it('up returns with etcd and kube-apiserver running; env prints KUBECONFIG; down leaves nothing behind', async () => {
    const dir = join(parent, 'cluster');
    const up = await cli('dev-cluster', 'up', '--dir', dir);
    expect(up.stdout.trim()).toBe(`export KUBECONFIG=${join(dir, 'kubeconfig')}`);
    const state = JSON.parse(readFileSync(join(dir, 'control-plane.json'), 'utf8')) as {
      server: string;
      pids: { etcd: number; apiserver: number };
    };
    expect(alive(state.pids.etcd)).toBe(true);
    expect(alive(state.pids.apiserver)).toBe(true);
    expect(readFileSync(join(dir, 'kubeconfig'), 'utf8')).toContain(`server: ${state.server}`);
    expect(existsSync(join(dir, 'kube-apiserver.log'))).toBe(true);

    const env = await cli('dev-cluster', 'env', '--dir', dir);
    expect(env.stdout.trim()).toBe(`export KUBECONFIG=${join(dir, 'kubeconfig')}`);
    const again = await cli('dev-cluster', 'up', '--dir', dir).catch(
      (error: Error & { stderr: string }) => error,
    );
    expect((again as { stderr: string }).stderr).toContain('already holds a control plane');

    await cli('dev-cluster', 'down', '--dir', dir);
    expect(alive(state.pids.apiserver)).toBe(false);
    expect(alive(state.pids.etcd)).toBe(false);
    expect(existsSync(dir)).toBe(false);
  });
});
