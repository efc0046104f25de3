import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { Agent, type AgentEnd } from '../agent/agent.js';
import { parseForwardTarget } from '../agent/forward-target.js';
import { checkMetadata, parseEdgeAddr, parseLabels } from '../agent/options.js';
import type { StagedRelease } from '../agent/update.js';

const HELP = `usage: edgeward agent --edge-addr HOST:PORT --label KEY=VALUE --forward URL [flags]

  --authtoken TOKEN     the tunnel credential's token (default: EDGEWARD_AUTHTOKEN; prefer the variable,
                        argv is visible to other users of the machine)
  --edge-addr HOST:PORT the edge's tunnel endpoint (required)
  --edge-ca FILE        PEM of the CA to trust for the edge's certificate (default: the system's CAs)
  --server-name NAME    the name the edge's certificate must carry (default: the host of --edge-addr)
  --label KEY=VALUE     a label of the tunnel group to bind; repeat for more (at least one)
  --forward URL         where carried connections go: http://host:port, tcp://host:port, tls://host:port
  --metadata TEXT       free text shown on the tunnel session (at most 4096 characters)
  --update-dir DIR      packed releases (edgeward-<version>.tgz, as npm pack writes them) the update
                        command installs from; the newest of the running major version is staged into
                        DIR.staged/<version> and runs at the next restart
  --no-update-check     refuse the update command (updates are disabled by configuration)
  --no-exec-restart     on a restart command reconnect in this process (a new session, the same code)
                        instead of re-executing the agent
  -h, --help            this help

The edge can send: stop (the agent exits 0), restart (the agent re-executes itself with the same
arguments, running a staged update if there is one; not on Windows), update (stage an update).

exit codes: 0 stopped (stop command, SIGTERM, SIGINT), 1 the edge refused the session or the agent
failed, 2 bad flags.

environment:
  EDGEWARD_AUTHTOKEN  the token, when --authtoken is not given
  LOG_LEVEL           pino log level (default info); logs go to stderr
`;

const AGENT_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** A flag problem: exit code 2, the message names the flag. */
class FlagError extends Error {}

interface AgentFlags {
  authtoken: string;
  edgeAddr: string;
  ca: string | undefined;
  serverName: string | undefined;
  labels: Record<string, string>;
  forward: ReturnType<typeof parseForwardTarget>;
  metadata: string | undefined;
  updateDir: string | undefined;
  updateCheck: boolean;
  execRestart: boolean;
}

function parseFlags(argv: string[]): AgentFlags | 'help' {
  let values: ReturnType<typeof parse>['values'];
  try {
    values = parse(argv).values;
  } catch (error) {
    // node:util names the flag: "Unknown option '--x'", "Option '--edge-addr <value>' argument missing".
    throw new FlagError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) return 'help';
  const flag = <T>(read: () => T): T => {
    try {
      return read();
    } catch (error) {
      throw new FlagError(error instanceof Error ? error.message : String(error));
    }
  };
  const edgeAddr = values['edge-addr'];
  if (!edgeAddr) throw new FlagError('--edge-addr: required (host:port of the edge tunnel endpoint)');
  flag(() => parseEdgeAddr(edgeAddr));
  const authtoken = values.authtoken ?? process.env.EDGEWARD_AUTHTOKEN;
  if (!authtoken) throw new FlagError('--authtoken: required when EDGEWARD_AUTHTOKEN is not set');
  const forwardText = values.forward;
  if (!forwardText) throw new FlagError('--forward: required (http://, tcp:// or tls:// URL)');
  const caFile = values['edge-ca'];
  return {
    authtoken,
    edgeAddr,
    ca: caFile === undefined ? undefined : flag(() => readPem(caFile)),
    serverName: values['server-name'],
    labels: flag(() => parseLabels(values.label ?? [])),
    forward: flag(() => parseForwardTarget(forwardText)),
    metadata:
      values.metadata === undefined ? undefined : flag(() => checkMetadata(values.metadata as string)),
    updateDir: values['update-dir'],
    updateCheck: !values['no-update-check'],
    execRestart: !values['no-exec-restart'],
  };
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      authtoken: { type: 'string' },
      'edge-addr': { type: 'string' },
      'edge-ca': { type: 'string' },
      'server-name': { type: 'string' },
      label: { type: 'string', multiple: true },
      forward: { type: 'string' },
      metadata: { type: 'string' },
      'update-dir': { type: 'string' },
      'no-update-check': { type: 'boolean' },
      'no-exec-restart': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
}

function readPem(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`--edge-ca: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    throw new Error(`--edge-ca: ${file} holds no PEM certificate`);
  return text;
}

/**
 * Runs the agent until the edge stops it (0), refuses it (1), or SIGTERM/SIGINT (0). A restart
 * command re-executes the agent — `process.execPath` with the same arguments (the staged update's
 * `dist/cli.js` instead of this one when an update finished), detached with the same stdio — and
 * this process exits 0; with `--no-exec-restart` the agent reconnects in this process instead.
 */
export async function agentCommand(argv: string[]): Promise<number> {
  let flags: AgentFlags | 'help';
  try {
    flags = parseFlags(argv);
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    process.stderr.write(`edgeward agent: ${error.message}\nrun 'edgeward agent --help' for the flags\n`);
    return 2;
  }
  if (flags === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  const logger = pino(
    {
      level: process.env.LOG_LEVEL ?? 'info',
      base: { pid: process.pid, agent_version: AGENT_VERSION },
      // Belt and braces: nothing logs the token, and were it ever to, it would be masked.
      redact: ['authtoken', '*.authtoken'],
    },
    pino.destination({ dest: 2, sync: true }),
  );
  const agent = new Agent({
    edgeAddr: flags.edgeAddr,
    authtoken: flags.authtoken,
    labels: flags.labels,
    forward: flags.forward,
    agentVersion: AGENT_VERSION,
    restart: flags.execRestart ? 'exit' : 'reconnect',
    update: { dir: flags.updateDir, enabled: flags.updateCheck },
    ...(flags.metadata === undefined ? {} : { metadata: flags.metadata }),
    ...(flags.ca === undefined ? {} : { ca: flags.ca }),
    ...(flags.serverName === undefined ? {} : { serverName: flags.serverName }),
  });
  agent.on('session', (sessionId) => logger.info({ sessionId }, 'session opened'));
  agent.on('refused', (reason) => logger.error({ reason }, 'the edge refused the session'));
  agent.on('disconnected', (reason, delayMs) =>
    logger.warn({ reason, delayMs }, 'disconnected, reconnecting'),
  );
  agent.on('connection', (source, outcome) => {
    if (outcome === 'carried') logger.debug({ source }, 'carrying a connection');
    else logger.warn({ source, forward: flags.forward }, 'the forward target is unreachable');
  });
  agent.on('command', (name, refusal) => {
    if (refusal === undefined) logger.info({ command: name }, 'command accepted');
    else logger.info({ command: name, refusal }, 'command refused');
  });
  agent.on('update', (event) => {
    if (event.state === 'updating') logger.info({ version: event.version }, 'updating');
    else if (event.state === 'updated')
      logger.info({ version: event.staged.version, dir: event.staged.dir }, 'updated, restart to run it');
    else logger.error({ version: event.version, error: event.error }, 'update failed');
  });

  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'closing the connection');
    agent.stop();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  logger.info({ edgeAddr: flags.edgeAddr, labels: flags.labels }, 'connecting');
  agent.start();
  let end: AgentEnd;
  try {
    end = await agent.done;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  switch (end.reason) {
    case 'stopped':
      return 0;
    case 'stop-command':
      logger.info('stopped by the edge');
      return 0;
    case 'refused':
      return 1;
    case 'restart':
      return reexec(end.staged, logger);
  }
}

/** Starts the agent again in a new process (the staged release's CLI if any); 0 once it runs. */
async function reexec(staged: StagedRelease | undefined, logger: pino.Logger): Promise<number> {
  const script = staged?.cli ?? process.argv[1];
  if (!script) {
    logger.error('cannot restart: the path of the running script is unknown');
    return 1;
  }
  const args = [...process.execArgv, script, ...process.argv.slice(2)];
  const child = spawn(process.execPath, args, { stdio: 'inherit', detached: true });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
  } catch (error) {
    logger.error({ err: error }, 'restart failed: could not start the agent again');
    return 1;
  }
  child.unref();
  logger.info({ newPid: child.pid, version: staged?.version ?? AGENT_VERSION }, 'restarted');
  return 0;
}
