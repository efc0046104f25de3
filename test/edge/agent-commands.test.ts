import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Agent, type AgentOptions, type UpdateEvent } from '../../src/agent/agent.js';
import { parseForwardTarget } from '../../src/agent/forward-target.js';
import { AgentCommandRefused, type AgentSession } from '../../src/edge/tunnel/agent-session.js';
import { TunnelEndpoint } from '../../src/edge/tunnel/tunnel-endpoint.js';
import { nextSessionOn } from '../support/edge.js';
import { OpensslWorkspace } from '../support/openssl.js';

/**
 * Agent commands (restart, stop, update) end to end: a real tunnel endpoint and agent on loopback,
 * the edge sending each command over the session as the API's command endpoints would.
 */
const TOKEN = 'ewt_agent_commands_test_token_0123456789';

let ssl: OpensslWorkspace;
let edgeCert: { cert: string; key: string };
let endpoint: TunnelEndpoint;
let tunnelPort: number;
let scratch: string;
const agents: Agent[] = [];
let counter = 0;

beforeAll(async () => {
  ssl = new OpensslWorkspace();
  edgeCert = ssl.selfSigned('edge.test');
  endpoint = new TunnelEndpoint({
    tls: edgeCert,
    async authenticate() {
      return { id: `ts_cmd${++counter}`, credentialId: 'cr_test' };
    },
  });
  tunnelPort = (await endpoint.listen(0)).port;
  scratch = mkdtempSync(join(tmpdir(), 'edgeward-agent-commands-'));
});

afterEach(() => {
  for (const agent of agents.splice(0)) agent.stop();
});

afterAll(async () => {
  await endpoint?.close();
  ssl?.cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

function startAgent(options: Partial<AgentOptions> = {}): Agent {
  const agent = new Agent({
    edgeAddr: `127.0.0.1:${tunnelPort}`,
    authtoken: TOKEN,
    labels: { app: 'commands' },
    forward: parseForwardTarget('tcp://127.0.0.1:9'),
    agentVersion: '0.1.0',
    ca: edgeCert.cert,
    serverName: 'edge.test',
    ...options,
  });
  agents.push(agent);
  agent.start();
  return agent;
}

function sessionOf(agent: Agent): Promise<AgentSession> {
  return nextSessionOn(endpoint, agent);
}

/** Whether the agent opens another session within `ms` (it should not after a stop). */
async function reconnectsWithin(agent: Agent, ms: number): Promise<boolean> {
  return once(agent, 'session', { signal: AbortSignal.timeout(ms) }).then(
    () => true,
    () => false,
  );
}

/** A directory of `npm pack`-style releases: `edgeward-<v>.tgz` holding `package/package.json`. */
function releases(...versions: string[]): string {
  const dir = join(scratch, `releases-${++counter}`);
  mkdirSync(dir);
  for (const version of versions) {
    const source = join(scratch, `src-${version}-${counter}`);
    mkdirSync(join(source, 'package'), { recursive: true });
    writeFileSync(
      join(source, 'package', 'package.json'),
      JSON.stringify({ name: 'edgeward', version, type: 'module' }),
    );
    execFileSync('tar', ['czf', join(dir, `edgeward-${version}.tgz`), '-C', source, 'package']);
  }
  return dir;
}

const refusal = (message: string) => new AgentCommandRefused(message);

describe('restart', () => {
  it('the agent reconnects under a new session id; the old session closes', async () => {
    const agent = startAgent();
    const first = await sessionOf(agent);
    const closed = once(first, 'closed');
    const restarted = once(agent, 'restart');
    const next = sessionOf(agent);
    await first.command('restart');
    expect(await restarted).toEqual([undefined]);
    await closed;
    const second = await next;
    expect(second.id).not.toBe(first.id);
    expect(endpoint.session(first.id)).toBeUndefined();
    expect(second.closed).toBe(false);
  });

  it("with restart: 'exit' the agent ends (for its program to re-exec) and does not reconnect", async () => {
    const agent = startAgent({ restart: 'exit' });
    const session = await sessionOf(agent);
    await session.command('restart');
    expect(await agent.done).toEqual({ reason: 'restart', staged: undefined });
    expect(await reconnectsWithin(agent, 500)).toBe(false);
    expect(session.closed).toBe(true);
  });

  it('is refused on Windows agents, and the session stays', async () => {
    const agent = startAgent({ platform: 'win32' });
    const session = await sessionOf(agent);
    expect(session.info.os).toBe('win32');
    await expect(session.command('restart')).rejects.toThrow(
      refusal('restart is not supported on Windows agents'),
    );
    expect(session.closed).toBe(false);
    expect(agent.sessionId).toBe(session.id);
  });
});

describe('stop', () => {
  it('the agent answers, closes its connection and does not reconnect', async () => {
    const agent = startAgent();
    const session = await sessionOf(agent);
    const stopped = once(agent, 'stop');
    const closed = once(session, 'closed');
    await session.command('stop');
    await stopped;
    expect(await agent.done).toEqual({ reason: 'stop-command' });
    await closed;
    expect(endpoint.session(session.id)).toBeUndefined();
    expect(await reconnectsWithin(agent, 500)).toBe(false);
  });

  it('commands to a closed session fail at the edge without reaching an agent', async () => {
    const agent = startAgent();
    const session = await sessionOf(agent);
    const closed = once(session, 'closed');
    await session.command('stop');
    await closed;
    await expect(session.command('update')).rejects.toThrow(`session ${session.id} is closed`);
  });
});

describe('update', () => {
  it('without an update directory: no update available', async () => {
    const session = await sessionOf(startAgent());
    await expect(session.command('update')).rejects.toThrow(refusal('no update available'));
  });

  it('with update checks disabled (--no-update-check): says so, even with an update there', async () => {
    const session = await sessionOf(startAgent({ update: { dir: releases('0.2.0'), enabled: false } }));
    await expect(session.command('update')).rejects.toThrow(
      refusal('update checks are disabled by the agent configuration'),
    );
  });

  it('only a new major version: no update available', async () => {
    const session = await sessionOf(
      startAgent({ update: { dir: releases('1.0.0', '0.1.0', '0.2.0-rc.1') } }),
    );
    await expect(session.command('update')).rejects.toThrow(refusal('no update available'));
  });

  it('stages the newest same-major release; a second update is refused until a restart', async () => {
    const dir = releases('0.1.1', '0.3.0', '1.0.0');
    const agent = startAgent({ update: { dir } });
    const session = await sessionOf(agent);
    const events: UpdateEvent[] = [];
    const finished = new Promise<UpdateEvent>((resolve) => {
      agent.on('update', (event) => {
        events.push(event);
        if (event.state !== 'updating') resolve(event);
      });
    });

    await session.command('update');
    const event = await finished;
    const staged = join(`${dir}.staged`, '0.3.0', 'package');
    expect(events.map((each) => each.state)).toEqual(['updating', 'updated']);
    expect(event).toEqual({ state: 'updated', staged: { version: '0.3.0', dir: staged, cli: undefined } });
    expect(JSON.parse(readFileSync(join(staged, 'package.json'), 'utf8')).version).toBe('0.3.0');
    expect(existsSync(join(`${dir}.staged`, '1.0.0'))).toBe(false);

    await expect(session.command('update')).rejects.toThrow(
      refusal('already updated to 0.3.0, restart to run it'),
    );
    // In library use a restart reconnects in this process and tells its program what is staged.
    const restarted = once(agent, 'restart');
    await session.command('restart');
    expect(await restarted).toEqual([{ version: '0.3.0', dir: staged, cli: undefined }]);
  });

  it("while updating: a second update is 'already updating' and a restart waits for it", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const agent = startAgent({
      restart: 'exit',
      update: {
        dir: releases('0.2.0'),
        async extract(_tgz, into) {
          await gate;
          mkdirSync(join(into, 'package', 'dist'), { recursive: true });
          writeFileSync(join(into, 'package', 'package.json'), '{"version":"0.2.0"}');
          writeFileSync(join(into, 'package', 'dist', 'cli.js'), '');
        },
      },
    });
    const session = await sessionOf(agent);
    const [first, second] = await Promise.allSettled([session.command('update'), session.command('update')]);
    expect(first.status).toBe('fulfilled');
    expect(second).toEqual({ status: 'rejected', reason: refusal('the agent is already updating') });
    await expect(session.command('restart')).rejects.toThrow(
      refusal('the agent is updating; restart once the update has finished'),
    );

    const updated = once(agent, 'update');
    release();
    const [event] = (await updated) as [UpdateEvent];
    expect(event.state).toBe('updated');
    await session.command('restart');
    const end = await agent.done;
    expect(end).toMatchObject({ reason: 'restart', staged: { version: '0.2.0' } });
    expect(end.reason === 'restart' && end.staged?.cli).toMatch(/0\.2\.0[/\\]package[/\\]dist[/\\]cli\.js$/);
  });
});

describe('unknown commands', () => {
  it('an agent answers 400 to a command it does not know, and stays', async () => {
    const session = await sessionOf(startAgent());
    // Bypasses the typed API on purpose: a newer edge may send a command this agent predates.
    await expect(session.command('reboot' as 'stop')).rejects.toThrow(
      refusal('unknown command: expected {"name": "restart" | "stop" | "update"}'),
    );
    expect(session.closed).toBe(false);
    await sleep(50);
    expect(session.closed).toBe(false);
  });
});
