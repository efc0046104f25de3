import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { processAlive } from '../../src/lib/process-alive.js';
import { betterSqlitePrebuild } from '../support/better-sqlite-prebuild.js';
import { waitFor } from '../support/eventually.js';
import { pebbleUnavailable } from '../support/pebble.js';

/**
 * The README's quick start as a new user follows it: a fresh copy of the repository (the files git
 * tracks, as a clone has them), the first command exactly as the README writes it, its demo
 * stopped with Ctrl-C, then the demo run a second time in the same copy. The second command (the
 * tests) is what CI runs on a clean clone; here it is only checked to be the README's.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/**
 * Where this run could make its endpoint network (root, `ip`), the demo's Service endpoint is a
 * veth pair of the demo's own too (src/lib/endpoint-network.ts), removed when it stops.
 */
const VETH = !inject('endpointSkipReason');
const ENDPOINT_LINK =
  /\n {2}endpoint address {3}198\.1[89]\.\d+\.\d+: veth (ewep\w+), its peer in network namespace (ewep-[\w-]+)\n/;

/** The two commands of the README's quick start, comments dropped. */
function quickStartCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/\n## /).find((part) => part.startsWith('Quick start'));
  const block = section && /```(?:sh|bash|shell)\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('README.md has no "## Quick start" section with a ```sh block');
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '');
}

/** A clean copy of the checkout: the files git tracks (and the ones this change adds), as a clone. */
function cleanCopy(): string {
  const copy = mkdtempSync(join(tmpdir(), 'edgeward-quick-start-'));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((file) => file !== '' && existsSync(join(ROOT, file)));
  for (const file of files) {
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(copy, file));
  }
  return copy;
}

interface Shell {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** `bash -c COMMAND` in its own process group, as a terminal runs it (Ctrl-C reaches the group). */
function shell(command: string, cwd: string, env: Record<string, string>): Shell {
  const child = spawn('bash', ['-c', command], {
    cwd,
    detached: true,
    env: { ...process.env, ...env, NO_COLOR: '1', FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, output: () => output, exited };
}

async function outputMatching(run: Shell, pattern: RegExp, timeoutMs: number): Promise<void> {
  const exited = () => run.child.exitCode !== null || run.child.signalCode !== null;
  await waitFor(() => pattern.test(run.output()) || exited(), {
    what: `${pattern} in the output`,
    timeoutMs,
    intervalMs: 20,
    detail: run.output,
  });
  if (!pattern.test(run.output()))
    throw new Error(`exited without ${pattern} in the output:\n${run.output()}`);
}

/** What both runs must show: a request through each edge, then the samples Ready and served. */
function expectTheDemoWorked(output: string): void {
  expect(output).toMatch(/agent online {7}session ts_\w+ \(svc\/2 from 127\.0\.0\.1\)/);
  expect(output).toMatch(
    /GET http:\/\/127\.0\.0\.1:(\d+)\/through\/the\/edge\n {2}→ hello from your local service \(it saw GET \/through\/the\/edge\)/,
  );
  // With Pebble built, the HTTPS edge's certificate comes from it, and the requests verify it.
  if (acmeSkip === undefined) {
    expect(output).toMatch(/\nACME CA {12}https:\/\/127\.0\.0\.1:\d+\/dir \(Pebble, on loopback/);
    expect(output).toMatch(
      /\ncertificate {8}cert_\w+ for demo\.localhost from the ACME CA \(issued by Pebble Intermediate CA/,
    );
    expect(output).toContain("(verified against the CA's root)");
  }
  expect(output).toMatch(
    /GET https:\/\/demo\.localhost:\d+\/through\/https.*\n {2}→ HTTP 200, x-served-by: edgeward: hello from your local service \(it saw GET \/through\/https, x-demo: added by the edge\)/,
  );
  expect(output).toMatch(
    /second edge {8}tunnel 127\.0\.0\.1:\d+, TLS 127\.0\.0\.1:\d+: the agent holds 2 sessions, one per edge/,
  );
  expect(output).toMatch(
    /GET https:\/\/demo\.localhost:\d+\/through\/the\/second\/edge\n {2}→ HTTP 200: hello from your local service/,
  );
  expect(output).toContain('CRDs               18 kinds of edgeward.dev installed');
  if (VETH) expect(output).toMatch(ENDPOINT_LINK);
  for (const [kind, name, prefix, reason] of [
    ['TunnelCredential', 'web-https-agent', 'cr', 'Created'],
    ['IPPolicy', 'web-clients', 'ipp', 'Created'],
    ['HTTPSEdge', 'web', 'edghts', 'Created'],
    ['HTTPSEdgeRoute', 'web-root', 'edghtsrt', 'Created'],
    ['Tunnel', 'web-https', 'ts', 'Online'],
  ]) {
    expect(output).toMatch(new RegExp(`\\n  ${kind} +${name} +${prefix}_\\w+ +True \\(${reason}\\)\\n`));
  }
  expect(output).toMatch(
    /GET https:\/\/web\.example\.com:\d+\/from\/kubernetes .*\n {2}→ HTTP 200, x-served-by: edgeward: hello from the Service web \(it saw GET \/from\/kubernetes, x-edge-host: web\.example\.com\)/,
  );
}

let copy: string;
let env: Record<string, string>;
const runs: Shell[] = [];

/** Pebble built (as `npm run tools -- --acme` does), so the demo takes its certificate from it. */
let acmeSkip: string | undefined;

beforeAll(async () => {
  copy = cleanCopy();
  env = await betterSqlitePrebuild(copy);
  acmeSkip = await pebbleUnavailable();
}, 120_000);

afterAll(async () => {
  // A failed run's processes (the whole group) do not outlive the test.
  for (const run of runs)
    if (run.child.pid && processAlive(-run.child.pid)) process.kill(-run.child.pid, 'SIGKILL');
  if (copy) rmSync(copy, { recursive: true, force: true });
});

describe('the quick start, from a clean copy', () => {
  it('is two commands: the demo, then the tests', () => {
    expect(quickStartCommands()).toEqual(['npm ci && npm run demo', 'npm ci && npm test']);
  });

  it('brings the demo up with the first command, and Ctrl-C stops everything it started at once', async () => {
    const [demo = ''] = quickStartCommands();
    const run = shell(demo, copy, env);
    runs.push(run);
    await outputMatching(run, /press Ctrl-C to stop it all/, 540_000);
    const output = run.output();
    expectTheDemoWorked(output);
    expect(output).toContain('Try it yourself:');
    expect(output).toMatch(/kubectl get edgeward -n demo/);
    const operatorPid = Number(/edgeward operator {2}pid (\d+)/.exec(output)?.[1]);
    const [, link, netns] = ENDPOINT_LINK.exec(output) ?? [];
    expect(processAlive(operatorPid)).toBe(true);

    // Ctrl-C: the terminal signals the whole foreground process group.
    const pressed = Date.now();
    process.kill(-(run.child.pid as number), 'SIGINT');
    await outputMatching(run, /SIGINT: stopping everything the demo started/, 2_000);
    const saidSoAfterMs = Date.now() - pressed;
    const code = await run.exited;
    // Everything the group ran has ended (the demo, npm, the operator), not only the shell.
    const group = -(run.child.pid as number);
    await waitFor(() => !processAlive(group), {
      what: 'every process of the demo to end',
      timeoutMs: 60_000,
    });
    const stoppedAfterMs = Date.now() - pressed;
    // The shell and npm got the SIGINT too: they end with it, or with the demo's status, 0.
    expect(code === 0 || run.child.signalCode === 'SIGINT', run.output()).toBe(true);
    const stopping = run.output().slice(run.output().indexOf('SIGINT: stopping'));
    for (const part of [
      'the operator',
      'the Kubernetes control plane',
      ...(VETH ? ['the endpoint network'] : []),
      'the edges and the agent',
      'the server',
      ...(acmeSkip === undefined ? ['the ACME CA (Pebble)'] : []),
    ]) {
      expect(stopping).toContain(`stopped ${part}`);
    }
    expect(stopping).toContain('Stopped.');
    expect(processAlive(operatorPid)).toBe(false);
    if (link && netns) {
      expect(execFileSync('ip', ['-br', 'link'], { encoding: 'utf8' })).not.toContain(link);
      expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(netns);
    }
    expect(existsSync(join(copy, '.edgeward-demo/cluster'))).toBe(false);
    expect(existsSync(join(copy, '.edgeward-demo/demo.pid'))).toBe(false);
    process.stdout.write(
      `quick start: Ctrl-C answered in ${saidSoAfterMs} ms, everything stopped in ${stoppedAfterMs} ms\n`,
    );
  }, 600_000);

  it('runs again in the same copy, from a fresh state, and --exit stops after the checks', async () => {
    const run = shell('npm run demo -- --exit', copy, env);
    runs.push(run);
    expect(await run.exited, run.output()).toBe(0);
    const output = run.output();
    expect(output).toContain("(cleared the previous run's state from");
    expectTheDemoWorked(output);
    // Nothing to try by hand: --exit has stopped it all (the kubeconfig is gone).
    expect(output).not.toContain('Try it yourself');
    expect(output).toContain('stopped the server');
    expect(existsSync(join(copy, '.edgeward-demo/cluster'))).toBe(false);
  }, 300_000);
});
