import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { freePort } from './free-port.js';
import type { ToolPaths } from './tools.js';

/**
 * Pebble, Let's Encrypt's ACME test server, and pebble-challtestsrv, the DNS server its validation
 * authority asks, as real processes on loopback: built from their Go module
 * (src/dev-cluster/tool-versions.ts) into the tools cache (`npm run tools -- --acme`). The demo and
the ACME tests run it.
 *
 * Every name resolves to 127.0.0.1 (no AAAA answers), so Pebble validates HTTP-01 at
 * `http://127.0.0.1:<httpPort>` and TLS-ALPN-01 at `127.0.0.1:<tlsPort>`, where the edges
 * listen. Pebble keeps everything in memory and makes a new root and intermediate at every start;
 * its ACME port sits behind a forwarder, so `down()` makes it unreachable without losing accounts
 * or orders. The forwarder runs in the test's own process: a synchronous call there (execFileSync
 * of a command that talks to Pebble, such as `kubectl wait` on a cert-manager Issuer) stalls every
 * ACME request until it returns.
 */

/** The tools `startPebble` runs (built by `npm run tools -- --acme`, or by the tests on first use). */
export const PEBBLE_TOOLS = ['pebble', 'pebble-challtestsrv', 'pebble-certs'] as const;
/** Pebble answers `malformed` to a request without a User-Agent (undici's `request` sends none). */
const USER_AGENT = 'edgeward';

/** Probes until `check` holds; throws saying what was awaited (and `detail()`) after `timeoutMs`. */
async function until(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs: number,
  detail: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${detail()}`);
    await sleep(100);
  }
}

export interface PebbleOptions {
  /** The port Pebble validates HTTP-01 challenges on (127.0.0.1, whatever the name). */
  httpPort: number;
  /** The port Pebble validates TLS-ALPN-01 challenges on (127.0.0.1, whatever the name). */
  tlsPort: number;
  /**
   * Lifetime of the certificates it issues, in seconds (Pebble's default 7,776,000: 90 days). Set
   * as the validity of Pebble's one profile, `default` (its `certificateValidityPeriod` setting is
   * read but ignored since profiles came).
   */
  certificateValidity?: number;
  /** The issuing chain's key type; Pebble's default is RSA. */
  keyAlgorithm?: 'rsa' | 'ecdsa';
  /** Percent of good nonces refused as `badNonce`: 0 unless given (Pebble's own default is 5). */
  nonceRejectPercent?: number;
  /** Percent of new orders that reuse a valid authorization: 0 unless given (Pebble's default 50). */
  authzReusePercent?: number;
}

export interface Pebble {
  /** `https://127.0.0.1:<port>/dir`, through the forwarder `down()` and `up()` control. */
  directoryUrl: string;
  /** The minica root that issued Pebble's HTTPS certificate (ACME and management APIs alike). */
  caBundlePem: string;
  /** Pebble's management API (`/roots/0`, `/intermediates/0`, ...), not behind the forwarder. */
  managementUrl: string;
  /** The DNS server Pebble asks, `127.0.0.1:<port>` (UDP and TCP). */
  dnsServer: string;
  /** pebble-challtestsrv's management API. */
  challtestsrvUrl: string;
  /** The root this Pebble issues under, made at its start (PEM). */
  rootPem(): Promise<string>;
  /** The intermediate that signs its certificates (PEM). */
  intermediatePem(): Promise<string>;
  /**
   * Stops listening on `directoryUrl`'s port (new connections: ECONNREFUSED) and cuts the open
   * ones; Pebble itself keeps running, with its accounts and orders.
   */
  down(): Promise<void>;
  /** Accepts connections again, on the same port. */
  up(): Promise<void>;
  /**
   * Makes every DNS query for `host` answer SERVFAIL, so validating it fails. Pebble v2.10 has no
   * `urn:ietf:params:acme:error:dns` problem at all: the challenge fails with `...:connection`
   * ("could not resolve URL ...") for HTTP-01, `...:malformed` ("Could not resolve URL ...") for
   * TLS-ALPN-01 and `...:unauthorized` ("Error retrieving TXT records ...") for DNS-01.
   */
  failDns(host: string): Promise<void>;
  /** Undoes `failDns(host)`: it resolves to 127.0.0.1 again. */
  restoreDns(host: string): Promise<void>;
  /** Makes `host` resolve to `ipv4` (another loopback address, where another edge listens). */
  pointHost(host: string, ipv4: string): Promise<void>;
  /** Both processes' output so far (the last 256 KiB), each line prefixed with its name. */
  output(): string;
  stop(): Promise<void>;
}

/** A loopback TCP forwarder that can stop listening and listen again on the same port. */
class Forwarder {
  #server: Server | undefined;
  readonly #open = new Set<Socket>();
  port = 0;

  constructor(readonly target: number) {}

  async listen(): Promise<void> {
    if (this.#server) return;
    const server = createServer((client) => {
      const upstream = connect({ host: '127.0.0.1', port: this.target });
      for (const socket of [client, upstream]) {
        this.#open.add(socket);
        socket.once('close', () => this.#open.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the forwarder has no port');
    this.port = address.port;
    this.#server = server;
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of this.#open) socket.destroy();
    await closed;
  }
}

/** A child whose output is kept (bounded) for error messages. */
function startProcess(
  name: string,
  binary: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  log: { text: string },
): ChildProcess {
  const child = spawn(binary, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const append = (chunk: Buffer) => {
    const lines = chunk.toString().replace(/\n$/, '').split('\n');
    log.text = `${log.text}${lines.map((line) => `${name}: ${line}\n`).join('')}`.slice(-256 * 1024);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return child;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timeout = sleep(5_000).then(() => 'timeout');
  if ((await Promise.race([exited, timeout])) === 'timeout') {
    child.kill('SIGKILL');
    await exited;
  }
}

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts pebble-challtestsrv and Pebble on free loopback ports and waits until Pebble serves its
 * directory. Pebble runs with `PEBBLE_VA_NOSLEEP=1` (validations at once), no refused nonces and no
 * authorization reuse unless asked.
 */
export async function startPebble(paths: ToolPaths, options: PebbleOptions): Promise<Pebble> {
  const certs = paths['pebble-certs'];
  const caBundlePem = readFileSync(join(certs, 'pebble.minica.pem'), 'utf8');
  const dir = mkdtempSync(join(tmpdir(), 'edgeward-pebble-'));
  const log = { text: '' };
  const children: ChildProcess[] = [];
  const forwarder = new Forwarder(await freePort());
  const [dnsPort, challtestsrvPort, managementPort] = [await freePort(), await freePort(), await freePort()];
  // A test process that dies without stop() (an uncaught error) leaves no Pebble behind.
  const killOnExit = () => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', killOnExit);
  const stopAll = async () => {
    process.off('exit', killOnExit);
    await forwarder.close();
    await Promise.all(children.map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  };
  const agent = new Agent({ connect: { ca: caBundlePem } });
  const challtestsrvUrl = `http://127.0.0.1:${challtestsrvPort}`;
  const managementUrl = `https://127.0.0.1:${managementPort}`;
  const detail = () => log.text;
  const exitedEarly = () => {
    const gone = children.find((child) => child.exitCode !== null || child.signalCode !== null);
    if (gone) throw new Error(`${gone.spawnfile} exited (${gone.exitCode ?? gone.signalCode}):\n${log.text}`);
  };
  try {
    children.push(
      startProcess(
        'challtestsrv',
        paths['pebble-challtestsrv'],
        [
          '-dnsserver',
          `127.0.0.1:${dnsPort}`,
          '-management',
          `127.0.0.1:${challtestsrvPort}`,
          // Its own challenge and DoH servers stay off: the tests' edges answer the challenges.
          '-http01',
          '',
          '-https01',
          '',
          '-tlsalpn01',
          '',
          '-doh',
          '',
          '-defaultIPv4',
          '127.0.0.1',
          '-defaultIPv6',
          '',
        ],
        {},
        log,
      ),
    );
    await until(
      async () => {
        exitedEarly();
        return (await portOpen(challtestsrvPort)) && (await portOpen(dnsPort));
      },
      'pebble-challtestsrv',
      10_000,
      detail,
    );

    const config = join(dir, 'pebble-config.json');
    writeFileSync(
      config,
      JSON.stringify(
        {
          pebble: {
            listenAddress: `127.0.0.1:${forwarder.target}`,
            managementListenAddress: `127.0.0.1:${managementPort}`,
            certificate: join(certs, 'localhost', 'cert.pem'),
            privateKey: join(certs, 'localhost', 'key.pem'),
            httpPort: options.httpPort,
            tlsPort: options.tlsPort,
            ocspResponderURL: '',
            externalAccountBindingRequired: false,
            ...(options.keyAlgorithm ? { keyAlgorithm: options.keyAlgorithm } : {}),
            ...(options.certificateValidity !== undefined
              ? {
                  profiles: {
                    default: { description: 'the tests', validityPeriod: options.certificateValidity },
                  },
                }
              : {}),
          },
        },
        null,
        2,
      ),
    );
    children.push(
      startProcess(
        'pebble',
        paths.pebble,
        ['-config', config, '-dnsserver', `127.0.0.1:${dnsPort}`],
        {
          PEBBLE_VA_NOSLEEP: '1',
          PEBBLE_WFE_NONCEREJECT: String(options.nonceRejectPercent ?? 0),
          PEBBLE_AUTHZREUSE: String(options.authzReusePercent ?? 0),
        },
        log,
      ),
    );
    let last = '';
    await until(
      async () => {
        exitedEarly();
        try {
          const response = await request(`https://127.0.0.1:${forwarder.target}/dir`, {
            dispatcher: agent,
            headers: { 'user-agent': USER_AGENT },
          });
          last = `${response.statusCode} ${await response.body.text()}`;
          return response.statusCode === 200;
        } catch (error) {
          last = (error as Error).message; // not listening yet
          return false;
        }
      },
      'Pebble to serve its directory',
      15_000,
      () => `last answer: ${last}\n${log.text}`,
    );
    await forwarder.listen();
  } catch (error) {
    await stopAll();
    await agent.close();
    throw error;
  }

  const managementGet = async (path: string): Promise<string> => {
    const response = await request(`${managementUrl}${path}`, {
      dispatcher: agent,
      headers: { 'user-agent': USER_AGENT },
    });
    const body = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`Pebble ${path}: ${response.statusCode} ${body}`);
    return body;
  };
  const challtestsrv = async (path: string, body: unknown): Promise<void> => {
    const response = await request(`${challtestsrvUrl}${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    const text = await response.body.text();
    if (response.statusCode !== 200)
      throw new Error(`pebble-challtestsrv ${path}: ${response.statusCode} ${text}`);
  };

  return {
    directoryUrl: `https://127.0.0.1:${forwarder.port}/dir`,
    caBundlePem,
    managementUrl,
    dnsServer: `127.0.0.1:${dnsPort}`,
    challtestsrvUrl,
    rootPem: () => managementGet('/roots/0'),
    intermediatePem: () => managementGet('/intermediates/0'),
    down: () => forwarder.close(),
    up: () => forwarder.listen(),
    failDns: (host) => challtestsrv('/set-servfail', { host }),
    restoreDns: (host) => challtestsrv('/clear-servfail', { host }),
    pointHost: (host, ipv4) => challtestsrv('/add-a', { host, addresses: [ipv4] }),
    output: () => log.text,
    async stop() {
      await stopAll();
      await agent.close();
    },
  };
}
