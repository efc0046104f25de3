import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import ssh2, { type ParsedKey, type SignCallback, type SigningRequestOptions } from 'ssh2';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { livenessBounds } from '../../src/edge/routing/session-liveness.js';
import { SessionPool } from '../../src/edge/routing/session-pool.js';
import {
  SessionRefused,
  SshEndpoint,
  type SshEndpointOptions,
  type SshSessionRequest,
} from '../../src/edge/ssh/ssh-endpoint.js';
import type { SshSession } from '../../src/edge/ssh/ssh-session.js';
import { killAll } from '../support/cli-process.js';
import { waitFor } from '../support/eventually.js';
import { type KeyFiles, OpenSshWorkspace } from '../support/openssh.js';

/**
 * The SSH transport on real sockets: an unmodified OpenSSH client (`/usr/bin/ssh`) opens a tunnel
 * with a remote forward (`-R 0:…`) and the `tunnel` command; the edge opens `forwarded-tcpip`
 * channels that ssh connects to a local HTTP service.
 */
const REFUSAL = "bind team=forbidden is not allowed by the credential's ACL";
const COMMAND_TIMEOUT_MS = 2_000;

let ssh: OpenSshWorkspace;
let clientKey: KeyFiles;
let strangerKey: KeyFiles;
let hostKey: KeyFiles;
let service: HttpServer;
let servicePort: number;
let endpoint: SshEndpoint;
let sshPort: number;
const requests: SshSessionRequest[] = [];
const refusals: string[] = [];
const children: ChildProcess[] = [];
let sessionCounter = 0;
let sessionEvents = 0;

/** The key blob of an authorized_keys line. */
const blobOf = (key: KeyFiles) => Buffer.from(key.line.split(' ')[1] as string, 'base64');

beforeAll(async () => {
  ssh = new OpenSshWorkspace();
  clientKey = ssh.keygen('ed25519');
  strangerKey = ssh.keygen('ed25519');
  hostKey = ssh.keygen('ed25519');

  service = createHttpServer((request, response) => {
    if (request.url === '/echo') {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => response.end(Buffer.concat(chunks)));
      return;
    }
    response.end(`hello from the service: ${request.method} ${request.url}`);
  });
  service.listen(0, '127.0.0.1');
  await once(service, 'listening');
  servicePort = (service.address() as net.AddressInfo).port;

  endpoint = new SshEndpoint({ ...endpointOptions(), commandTimeoutMs: COMMAND_TIMEOUT_MS });
  endpoint.on('refused', (_ip, reason) => refusals.push(reason));
  endpoint.on('session', () => sessionEvents++);
  sshPort = (await endpoint.listen(0)).port;
});

afterEach(async () => {
  await killAll(children);
});

afterAll(async () => {
  service?.close();
  await endpoint?.close();
  ssh?.remove();
});

/** Accepts only `clientKey`; refuses to bind `team=forbidden`. */
function endpointOptions(): SshEndpointOptions {
  return {
    hostKeys: [readFileSync(hostKey.path)],
    async authenticate(key) {
      return key.data.equals(blobOf(clientKey)) ? { credentialId: 'sshcr_test' } : undefined;
    },
    async openSession(request) {
      requests.push(request);
      if (request.labels.team === 'forbidden') throw new SessionRefused(REFUSAL);
      return { id: `ts_ssh${++sessionCounter}` };
    },
  };
}

interface SshRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Exit status (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** `/usr/bin/ssh` against the endpoint, with no user configuration, agent or known hosts. */
function runSsh(args: string[], { key = clientKey, port = sshPort } = {}): SshRun {
  const child = spawn(
    '/usr/bin/ssh',
    [
      '-F',
      '/dev/null',
      '-p',
      String(port),
      '-i',
      key.path,
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'IdentityAgent=none',
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'ExitOnForwardFailure=yes',
      '-o',
      'BatchMode=yes',
      '-o',
      'ConnectTimeout=5',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

function tunnel(labels = ['--label', 'edge=web'], target = `127.0.0.1:${servicePort}`): SshRun {
  return runSsh(['-R', `0:${target}`, 'edge@127.0.0.1', 'tunnel', ...labels]);
}

/** The next session the endpoint accepts, once ssh has printed that it is online. */
async function nextSession(run: SshRun): Promise<SshSession> {
  const [session] = (await Promise.race([
    once(endpoint, 'session'),
    run.exited.then((code) => {
      throw new Error(`ssh exited (${code}) before a session: ${run.stderr()}`);
    }),
  ])) as [SshSession];
  await until(
    () => run.stdout().includes(`${session.id} is online`),
    () => run.stdout(),
  );
  return session;
}

async function until(condition: () => boolean, describe: () => string, timeoutMs = 5_000): Promise<void> {
  await waitFor(condition, {
    what: 'the condition',
    timeoutMs,
    intervalMs: 20,
    detail: () => `last seen: ${describe()}`,
  });
}

/** One HTTP/1.1 exchange on a carried stream: the raw answer, up to the service closing it. */
async function httpOver(stream: Duplex, method: string, path: string, body?: Buffer) {
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    stream.once('end', resolve);
    stream.once('error', reject);
  });
  stream.write(
    `${method} ${path} HTTP/1.1\r\nHost: service\r\nConnection: close\r\nContent-Length: ${body?.length ?? 0}\r\n\r\n`,
  );
  if (body) stream.write(body);
  await ended;
  stream.destroy();
  const answer = Buffer.concat(chunks);
  const split = answer.indexOf('\r\n\r\n');
  return { head: answer.subarray(0, split).toString('latin1'), body: answer.subarray(split + 4) };
}

describe('SSH transport (an unmodified OpenSSH client with -R)', () => {
  it('opens a session with the labels, the credential and what ssh says of itself', async () => {
    const run = runSsh([
      '-R',
      `0:127.0.0.1:${servicePort}`,
      'edge@127.0.0.1',
      'tunnel',
      '--label',
      'edge=web',
      '-l',
      'team=a',
      '--metadata',
      "'built from main'",
    ]);
    const session = await nextSession(run);
    // `ssh -V` (on stderr): `OpenSSH_9.2p1 Debian-2+deb12u6, OpenSSL …`; the ident it sends is
    // `SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u6`.
    const [software, comment] = spawnSync('ssh', ['-V'], { encoding: 'utf8' }).stderr.split(/[\s,]+/);
    expect(session.info.agentVersion).toBe(software);
    expect(session.info.os).toBe(comment);
    expect(session.info).toMatchObject({
      credentialId: 'sshcr_test',
      transport: 'ssh',
      labels: { edge: 'web', team: 'a' },
      metadata: 'built from main',
      ip: '127.0.0.1',
    });
    expect(endpoint.session(session.id)).toBe(session);
    expect(requests.at(-1)).toEqual({
      credentialId: 'sshcr_test',
      labels: { edge: 'web', team: 'a' },
      metadata: 'built from main',
      ip: '127.0.0.1',
      agentVersion: session.info.agentVersion,
      os: session.info.os,
    });
    expect(run.stdout()).toContain('labels:   edge=web, team=a');
    expect(run.stdout()).toContain('metadata: built from main');
  });
  it('carries an HTTP request on a stream through ssh to the service behind it', async () => {
    const session = await nextSession(tunnel());
    const stream = await session.openStream({ ip: '127.0.0.1', port: 1234 });
    const answer = await httpOver(stream, 'GET', '/path?q=1');
    expect(answer.head).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(answer.body.toString()).toBe('hello from the service: GET /path?q=1');
    expect(session.closed).toBe(false);
  });

  it('multiplexes 8 streams of 256 KiB at once, each echoed byte for byte', async () => {
    const session = await nextSession(tunnel());
    const payloads = Array.from({ length: 8 }, (_, index) => {
      const payload = Buffer.alloc(256 * 1024 + index);
      for (let i = 0; i < payload.length; i++) payload[i] = (i * 7 + index * 13) & 0xff;
      return payload;
    });
    const answers = await Promise.all(
      payloads.map(async (payload, index) => {
        const stream = await session.openStream({ ip: '203.0.113.7', port: 40_000 + index });
        return httpOver(stream, 'POST', '/echo', payload);
      }),
    );
    answers.forEach((answer, index) => {
      expect(answer.head, `stream ${index}`).toMatch(/^HTTP\/1\.1 200 OK/);
      expect(answer.body.equals(payloads[index] as Buffer), `stream ${index}`).toBe(true);
    });
  });

  it('works with a fixed -R port too (the port is not used for routing)', async () => {
    const run = runSsh([
      '-R',
      `18080:127.0.0.1:${servicePort}`,
      'edge@127.0.0.1',
      'tunnel',
      '--label=edge=fixed',
    ]);
    const session = await nextSession(run);
    expect(session.info.labels).toEqual({ edge: 'fixed' });
    expect(run.stdout()).toContain('(localhost:18080, a nominal port');
    const answer = await httpOver(await session.openStream({ ip: '127.0.0.1', port: 1 }), 'GET', '/fixed');
    expect(answer.body.toString()).toBe('hello from the service: GET /fixed');
  });

  it('a target ssh cannot reach fails that stream alone, not the session', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const session = await nextSession(tunnel(['--label', 'edge=web'], `127.0.0.1:${closedPort}`));
    await expect(session.openStream({ ip: '127.0.0.1', port: 1 })).rejects.toThrow(
      /could not reach its target/,
    );
    expect(session.closed).toBe(false);
  });

  it('refuses a key that is not registered: ssh says Permission denied', async () => {
    const sessionsBefore = sessionEvents;
    const run = runSsh(['-R', `0:127.0.0.1:${servicePort}`, 'edge@127.0.0.1', 'tunnel', '-l', 'edge=web'], {
      key: strangerKey,
    });
    expect(await run.exited).not.toBe(0);
    expect(run.stderr()).toContain('Permission denied (publickey)');
    expect(sessionEvents).toBe(sessionsBefore);
    await until(
      () => refusals.includes('the ssh-ed25519 key is not a registered SSH credential'),
      () => refusals.join('; '),
    );
  });

  it('verifies the signature: the registered public key signed by another private key is refused', async () => {
    const publicKey = parse(readFileSync(`${clientKey.path}.pub`));
    const connect = (signer: ParsedKey) =>
      new Promise<string>((resolve) => {
        const client = new ssh2.Client();
        client.on('ready', () => {
          client.end();
          resolve('ready');
        });
        client.on('error', (error) => resolve(error.message));
        client.connect({
          host: '127.0.0.1',
          port: sshPort,
          username: 'edge',
          agent: new SigningAgent(publicKey, signer),
          readyTimeout: 5_000,
        });
      });
    // The control: the right private key behind the same agent authenticates.
    expect(await connect(parse(readFileSync(clientKey.path)))).toBe('ready');
    expect(await connect(parse(readFileSync(strangerKey.path)))).toMatch(/authentication methods failed/);
    await until(
      () => refusals.includes('bad signature for a ssh-ed25519 key'),
      () => refusals.join('; '),
    );
  });

  it('a refused bind: ssh exits 1 with the refusal on stderr, and no session', async () => {
    const sessionsBefore = sessionEvents;
    const run = tunnel(['--label', 'edge=web', '--label', 'team=forbidden']);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(`edgeward: session refused: ${REFUSAL}`);
    expect(requests.at(-1)?.labels).toEqual({ edge: 'web', team: 'forbidden' });
    expect(sessionEvents).toBe(sessionsBefore);
  });

  it('a killed ssh (SIGKILL) closes its session within a few seconds', async () => {
    const run = tunnel();
    const session = await nextSession(run);
    const closed = once(session, 'closed');
    const killedAt = Date.now();
    run.child.kill('SIGKILL');
    const [reason] = (await closed) as [string];
    expect(Date.now() - killedAt).toBeLessThan(3_000);
    expect(reason).toBe('the ssh client disconnected');
    expect(session.closed).toBe(true);
    expect(endpoint.session(session.id)).toBeUndefined();
  });

  it('a client that stops answering (SIGSTOP) is dropped after missed keepalives', async () => {
    const quick = new SshEndpoint({
      ...endpointOptions(),
      liveness: { intervalMs: 300, overdueMs: 300, timeoutMs: 600 },
    });
    try {
      const { port } = await quick.listen(0);
      const run = runSsh(['-R', `0:127.0.0.1:${servicePort}`, 'edge@127.0.0.1', 'tunnel', '-l', 'edge=web'], {
        port,
      });
      const [session] = (await once(quick, 'session')) as [SshSession];
      // Answering keepalives, the session outlives several intervals.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(session.closed).toBe(false);
      const closed = once(session, 'closed');
      const stoppedAt = Date.now();
      run.child.kill('SIGSTOP');
      expect(await closed).toEqual(['the ssh client stopped answering keepalives']);
      expect(Date.now() - stoppedAt).toBeLessThan(3_000);
      expect(quick.sessions()).toHaveLength(0);
    } finally {
      await quick.close();
    }
  });

  it("command('stop') ends the ssh process (exit 0, told why); restart and update are refused", async () => {
    const run = tunnel();
    const session = await nextSession(run);
    await expect(session.command('restart')).rejects.toThrow(/cannot be restarted remotely/);
    await expect(session.command('update')).rejects.toThrow(/cannot be updated remotely/);
    expect(session.closed).toBe(false);
    const closed = once(session, 'closed');
    await session.command('stop');
    expect(await run.exited).toBe(0);
    expect(run.stderr()).toContain(`edgeward: session ${session.id} closed: stopped by the edge`);
    expect(await closed).toEqual(['stopped by the edge']);
    expect(endpoint.session(session.id)).toBeUndefined();
  });

  it('close(reason) tells the user and ssh exits 1', async () => {
    const run = tunnel();
    const session = await nextSession(run);
    session.close('the credential was revoked');
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(`edgeward: session ${session.id} closed: the credential was revoked`);
  });

  it('help prints the usage and exits 0', async () => {
    const run = runSsh(['edge@127.0.0.1', 'help']);
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toContain('Usage:');
    expect(run.stdout()).toContain('tunnel --label KEY=VALUE');
  });

  it('an unknown word: a message on stderr, exit 2', async () => {
    const run = runSsh(['edge@127.0.0.1', 'tunel', '--label', 'edge=web']);
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toContain("edgeward: unknown command 'tunel': the commands are tunnel and help");
  });

  it('tunnel without a -R forward: a message on stderr, exit 2, and openSession is not asked', async () => {
    const asked = requests.length;
    const run = runSsh(['edge@127.0.0.1', 'tunnel', '--label', 'edge=web']);
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toContain('edgeward: tunnel needs a remote forward: add -R 0:HOST:PORT');
    expect(requests).toHaveLength(asked);
  });

  it('ssh -N (no command, so no labels) is told by the banner and closed after the command timeout', async () => {
    const startedAt = Date.now();
    const run = runSsh(['-N', '-R', `0:127.0.0.1:${servicePort}`, 'edge@127.0.0.1']);
    const status = await run.exited;
    expect(status).not.toBe(0);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(COMMAND_TIMEOUT_MS - 100);
    expect(run.stderr()).toContain('a connection that runs no tunnel command within 2 s is closed');
    await until(
      () => refusals.includes('ran no tunnel command within 2 s'),
      () => refusals.join('; '),
    );
  });
});

/** An ssh-agent in the test: offers one public key and signs with whatever private key it holds. */
class SigningAgent extends ssh2.BaseAgent<ParsedKey> {
  constructor(
    private readonly publicKey: ParsedKey,
    private readonly signer: ParsedKey,
  ) {
    super();
  }

  getIdentities(callback: (error?: Error | null, keys?: ParsedKey[]) => void): void {
    callback(null, [this.publicKey]);
  }

  sign(
    _publicKey: ParsedKey,
    data: Buffer,
    options: SigningRequestOptions | SignCallback,
    callback?: SignCallback,
  ): void {
    const done = typeof options === 'function' ? options : callback;
    const hash = typeof options === 'function' ? undefined : options.hash;
    done?.(null, this.signer.sign(data, hash));
  }
}

function parse(data: Buffer): ParsedKey {
  const key = ssh2.utils.parseKey(data);
  if (key instanceof Error) throw key;
  return key;
}

describe('SSH sessions that stop answering (liveness)', () => {
  /** A local HTTP service answering with its name, so a carried stream tells which client it went through. */
  async function namedService(name: string): Promise<{ port: number; close: () => void }> {
    const named = createHttpServer((request, response) => {
      request.resume();
      response.end(name);
    });
    named.listen(0, '127.0.0.1');
    await once(named, 'listening');
    return { port: (named.address() as net.AddressInfo).port, close: () => named.close() };
  }

  it('a frozen client (SIGSTOP) leaves rotation: no connection hangs on it, the other carries them all, then it is closed', async () => {
    const liveness = { intervalMs: 400, overdueMs: 400, timeoutMs: 1200 };
    const bounds = livenessBounds(liveness);
    const quick = new SshEndpoint({ ...endpointOptions(), liveness });
    const pool = new SessionPool();
    quick.on('session', (session) => pool.add(session));
    const frozenService = await namedService('frozen');
    const steadyService = await namedService('steady');
    try {
      const { port } = await quick.listen(0);
      const open = (target: number) =>
        runSsh(['-R', `0:127.0.0.1:${target}`, 'edge@127.0.0.1', 'tunnel', '-l', 'edge=pair'], { port });
      const frozen = open(frozenService.port);
      const [frozenSession] = (await once(quick, 'session')) as [SshSession];
      open(steadyService.port);
      await once(quick, 'session');
      const labels = { edge: 'pair' };
      const carry = async (index: number) => {
        const stream = await pool.connect(labels, { ip: '203.0.113.9', port: 41_000 + index });
        return (await httpOver(stream, 'GET', '/')).body.toString();
      };
      // Answering keepalives, both carry connections for several liveness intervals.
      const before: string[] = [];
      for (let index = 0; index < 10; index++) {
        before.push(await carry(index));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(new Set(before)).toEqual(new Set(['frozen', 'steady']));
      expect(frozenSession.inRotation).toBe(true);

      const closed = once(frozenSession, 'closed');
      const stoppedAt = Date.now();
      frozen.child.kill('SIGSTOP');
      // Opened at once, half of them go to the frozen client first: they move on when it leaves
      // rotation, so every one is carried, by the other client, none later than that.
      const during = await Promise.all(Array.from({ length: 6 }, (_, index) => carry(100 + index)));
      expect(during).toEqual(Array(6).fill('steady'));
      expect(frozenSession.inRotation).toBe(false);
      const slackMs = 2_000; // a loaded machine's timers
      expect(Date.now() - stoppedAt).toBeLessThan(bounds.outOfRotationMs + slackMs);
      expect(await closed).toEqual(['the ssh client stopped answering keepalives']);
      expect(Date.now() - stoppedAt).toBeLessThan(bounds.closedMs + slackMs);
      expect(pool.group(labels)).toHaveLength(1);
      // Thawed, ssh finds its connection gone and exits.
      frozen.child.kill('SIGCONT');
      expect(await frozen.exited).toBe(255);
    } finally {
      await quick.close();
      frozenService.close();
      steadyService.close();
    }
  });
});
