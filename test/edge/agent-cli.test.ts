import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentSession } from '../../src/edge/tunnel/agent-session.js';
import { SessionRefused, TunnelEndpoint } from '../../src/edge/tunnel/tunnel-endpoint.js';
import { waitFor as waitUntil } from '../support/eventually.js';
import { MountedSecret } from '../support/mounted-secret.js';
import { type OpensslCertificate, OpensslWorkspace } from '../support/openssl.js';

/**
 * `edgeward agent` as a process (through tsx, as the other CLI suites run it) against a real tunnel
 * endpoint in this test: exit codes, what it logs, and that the token never shows up.
 */
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const GOOD_TOKEN = 'ewt_cli_good_token_0123456789abcdef';
const BAD_TOKEN = 'ewt_cli_revoked_token_9876543210fedcba';

let ssl: OpensslWorkspace;
let caFile: string;
let edgeLeaf: OpensslCertificate;
let endpoint: TunnelEndpoint;
let edgeAddr: string;
let counter = 0;

interface AgentProcess {
  child: ChildProcess;
  /** The exit code once the process exited and its output was read. */
  closed: Promise<number | null>;
  /** The exit code as soon as it exited (a re-exec it started may still hold the pipes). */
  exited: Promise<number | null>;
  output(): string;
}

const running: ChildProcess[] = [];
const pids: number[] = [];

beforeAll(async () => {
  ssl = new OpensslWorkspace();
  const { ca, leaf } = ssl.caAndLeaf('edge.test');
  caFile = ca.path;
  edgeLeaf = leaf;
  endpoint = new TunnelEndpoint({
    tls: { cert: leaf.pem, key: leaf.key.pem },
    async authenticate(hello) {
      if (hello.authtoken !== GOOD_TOKEN) throw new SessionRefused('the authtoken is unknown or was revoked');
      return { id: `ts_cli${++counter}`, credentialId: 'cr_cli' };
    },
  });
  edgeAddr = `127.0.0.1:${(await endpoint.listen(0)).port}`;
});

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

afterAll(async () => {
  await endpoint?.close();
  ssl?.cleanup();
});

function agent(args: string[], env: Record<string, string> = {}): AgentProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'agent', ...args], {
    env: { ...process.env, LOG_LEVEL: 'info', EDGEWARD_AUTHTOKEN: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, closed, exited, output: () => output };
}

const connectFlags = (token = GOOD_TOKEN) => [
  '--authtoken',
  token,
  '--edge-addr',
  edgeAddr,
  '--edge-ca',
  caFile,
  '--server-name',
  'edge.test',
  '--label',
  'app=cli',
  '--forward',
  'tcp://127.0.0.1:9',
];

/** The pino lines of the output, parsed. */
function logLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function nextSession(): Promise<AgentSession> {
  return once(endpoint, 'session', { signal: AbortSignal.timeout(15_000) }).then(
    ([session]) => session as AgentSession,
  );
}

describe('edgeward agent', () => {
  it('exits 2 naming the flag when --edge-addr is missing, never echoing the token', async () => {
    const missing = agent([
      '--authtoken',
      GOOD_TOKEN,
      '--label',
      'app=cli',
      '--forward',
      'tcp://127.0.0.1:9',
    ]);
    expect(await missing.closed).toBe(2);
    expect(missing.output()).toContain('edgeward agent: --edge-addr: required');
    expect(missing.output()).not.toContain(GOOD_TOKEN);
  });

  it('exits 1 with the reason when the edge refuses the token, which it never prints', async () => {
    const refused = agent(connectFlags(BAD_TOKEN));
    expect(await refused.closed).toBe(1);
    const lines = logLines(refused.output());
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'the edge refused the session',
        reason: 'the authtoken is unknown or was revoked',
      }),
    );
    expect(refused.output()).not.toContain(BAD_TOKEN);
    expect(endpoint.sessions()).toHaveLength(0);
  });

  it('with --no-exec-restart a restart reconnects in-process; SIGTERM closes the session and exits 0', async () => {
    const first = nextSession();
    // The token from the environment this time.
    const run = agent([...connectFlags().slice(2), '--no-exec-restart', '--metadata', 'cli test'], {
      EDGEWARD_AUTHTOKEN: GOOD_TOKEN,
    });
    const session = await first;
    expect(session.info).toMatchObject({
      labels: { app: 'cli' },
      metadata: 'cli test',
      agentVersion: '0.1.0',
    });

    const second = nextSession();
    await session.command('restart');
    const restarted = await second;
    expect(restarted.id).not.toBe(session.id);

    const closed = once(restarted, 'closed');
    run.child.kill('SIGTERM');
    expect(await run.closed).toBe(0);
    await closed;
    const lines = logLines(run.output());
    const opened = lines.filter((line) => line.msg === 'session opened').map((line) => line.sessionId);
    expect(opened).toEqual([session.id, restarted.id]);
    expect(new Set(lines.map((line) => line.pid))).toEqual(new Set([run.child.pid]));
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'closing the connection', signal: 'SIGTERM' }),
    );
    expect(run.output()).not.toContain(GOOD_TOKEN);
  });

  it('re-reads --edge-ca when its mounted Secret is swapped: the session stays, the next dial trusts the new CA', async () => {
    const secret = new MountedSecret({ 'ca.crt': readFileSync(caFile, 'utf8') });
    try {
      const first = nextSession();
      const flags = connectFlags().map((flag) => (flag === caFile ? secret.path('ca.crt') : flag));
      const run = agent([...flags, '--no-exec-restart']);
      const session = await first;

      // The edge's certificate now comes from a new CA, which the Secret then holds alone.
      const rotated = ssl.caAndLeaf('edge.test', 'rotated edge.test CA');
      endpoint.setCertificate({ cert: rotated.leaf.pem, key: rotated.leaf.key.pem });
      secret.update({ 'ca.crt': rotated.ca.pem });
      const reloaded = await waitFor(() =>
        logLines(run.output()).find((line) => String(line.msg).startsWith('reloaded the edge CA')),
      );
      expect(reloaded).toMatchObject({ level: 30, serials: [expect.any(String)] });
      expect(endpoint.sessions().map((held) => held.id)).toEqual([session.id]);

      // The reconnect trusts the new CA only: a new session.
      const second = nextSession();
      await session.command('restart');
      const restarted = await second;
      expect(restarted.id).not.toBe(session.id);

      // Contents that are no CA: refused with a warning; the CA in force stays.
      secret.update({ 'ca.crt': 'not a certificate' });
      const kept = await waitFor(() =>
        logLines(run.output()).find((line) => String(line.msg).startsWith('kept the current edge CA')),
      );
      expect(kept).toMatchObject({ level: 40 });
      const third = nextSession();
      await restarted.command('restart');
      expect((await third).id).not.toBe(restarted.id);
      run.child.kill('SIGTERM');
      expect(await run.closed).toBe(0);
    } finally {
      endpoint.setCertificate({ cert: edgeLeaf.pem, key: edgeLeaf.key.pem });
      secret.remove();
    }
  });

  it('a restart re-executes the agent (a new process, a new session); a stop then ends that process', async () => {
    const first = nextSession();
    const run = agent(connectFlags());
    const session = await first;
    const second = nextSession();
    await session.command('restart');
    // The first process exits; the one it started keeps its stdio (our pipes), so wait for exit only.
    expect(await run.exited).toBe(0);
    const restarted = await second;
    expect(restarted.id).not.toBe(session.id);

    const reexec = logLines(run.output()).find((line) => line.msg === 'restarted');
    expect(reexec).toMatchObject({ pid: run.child.pid, version: '0.1.0' });
    const newPid = Number(reexec?.newPid);
    expect(newPid).toBeGreaterThan(0);
    pids.push(newPid);
    const opened = await waitFor(() =>
      logLines(run.output()).find((line) => line.msg === 'session opened' && line.sessionId === restarted.id),
    );
    expect(opened.pid).toBe(newPid);

    await restarted.command('stop');
    await waitFor(() => !alive(newPid));
    expect(run.output()).toContain('stopped by the edge');
    expect(run.output()).not.toContain(GOOD_TOKEN);
  });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Polls until `check` returns something truthy (5 s at most). */
const waitFor = <T>(check: () => T | undefined | false): Promise<T> =>
  waitUntil(check, { what: 'the agent' });
