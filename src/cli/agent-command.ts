import { spawn } from 'node:child_process';
import type { Logger } from 'pino';
import type { AgentEnd } from '../agent/agent.js';
import { readEdgeCa, watchEdgeCa } from '../agent/edge-ca.js';
import { parseForwardTarget } from '../agent/forward-target.js';
import { checkMetadata, DEFAULT_HA_CONNECTIONS, parseEdgeAddr, parseLabels } from '../agent/options.js';
import type { StagedRelease } from '../agent/update.js';
import { type Flags, type FlagValues, secondsFlag } from '../lib/flags.js';
import { packageVersion } from '../lib/package-version.js';
import { SESSION_LIVENESS } from '../schemas/tunnel-protocol.js';
import { defineCommand, UsageError } from './command.js';

const AGENT_VERSION = packageVersion();

interface AgentFlags {
  authtoken: string;
  edgeAddr: string;
  /** `--edge-ca`: the file and the PEM read from it at start. */
  ca: { file: string; pem: string } | undefined;
  serverName: string | undefined;
  labels: Record<string, string>;
  forward: ReturnType<typeof parseForwardTarget>;
  metadata: string | undefined;
  updateDir: string | undefined;
  updateCheck: boolean;
  execRestart: boolean;
  haConnections: number;
  liveness: { intervalMs: number; timeoutMs: number };
}

const AGENT_FLAGS = {
  authtoken: {
    type: 'string',
    value: 'TOKEN',
    defaultText: 'EDGEWARD_AUTHTOKEN',
    help: "the tunnel credential's token; prefer the variable: argv is visible to other users of the machine",
  },
  'edge-addr': {
    type: 'string',
    value: 'HOST:PORT',
    help: "the edges' tunnel endpoint (required): one edge, or the shared address of several (a load balancer, or a name resolving to each edge)",
  },
  'ping-interval': {
    type: 'string',
    value: 'S',
    default: String(SESSION_LIVENESS.intervalMs / 1000),
    help: 'seconds between HTTP/2 pings of each edge',
  },
  'ping-timeout': {
    type: 'string',
    value: 'S',
    default: String(SESSION_LIVENESS.timeoutMs / 1000),
    help: 'seconds past a ping interval without a word from an edge before its connection is dropped and dialed again',
  },
  'ha-connections': {
    type: 'string',
    value: 'N',
    defaultText: String(DEFAULT_HA_CONNECTIONS),
    help: 'hold a session on up to N edges at once (each its own session), so losing one edge loses no traffic',
  },
  'edge-ca': {
    type: 'string',
    value: 'FILE',
    defaultText: "the system's CAs",
    help: "PEM of the CA to trust for the edge's certificate, re-read when it changes (new dials trust the new one)",
  },
  'server-name': {
    type: 'string',
    value: 'NAME',
    defaultText: 'the host of --edge-addr',
    help: "the name the edge's certificate must carry",
  },
  label: {
    type: 'string',
    value: 'KEY=VALUE',
    multiple: true,
    help: 'a label of the tunnel group to bind; repeat for more (at least one)',
  },
  forward: {
    type: 'string',
    value: 'URL',
    help: 'where carried connections go: http://host:port, tcp://host:port, tls://host:port (required)',
  },
  metadata: {
    type: 'string',
    value: 'TEXT',
    help: 'free text shown on the tunnel session (at most 4096 characters)',
  },
  'update-dir': {
    type: 'string',
    value: 'DIR',
    help: 'packed releases (edgeward-<version>.tgz, as npm pack writes them) the update command installs from; the newest of the running major version is staged into DIR.staged/<version> and runs at the next restart',
  },
  'no-update-check': {
    type: 'boolean',
    help: 'refuse the update command (updates are disabled by configuration)',
  },
  'no-exec-restart': {
    type: 'boolean',
    help: 'on a restart command reconnect in this process (a new session, the same code) instead of re-executing the agent',
  },
} as const satisfies Flags;

/** The flags as the agent takes them; throws a UsageError naming the flag. */
function toAgentFlags(values: FlagValues<typeof AGENT_FLAGS>): AgentFlags {
  const flag = <T>(read: () => T): T => {
    try {
      return read();
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error), { cause: error });
    }
  };
  const edgeAddr = values['edge-addr'];
  if (!edgeAddr) throw new UsageError('--edge-addr: required (host:port of the edge tunnel endpoint)');
  flag(() => parseEdgeAddr(edgeAddr));
  const authtoken = values.authtoken ?? process.env.EDGEWARD_AUTHTOKEN;
  if (!authtoken) throw new UsageError('--authtoken: required when EDGEWARD_AUTHTOKEN is not set');
  const forwardText = values.forward;
  if (!forwardText) throw new UsageError('--forward: required (http://, tcp:// or tls:// URL)');
  const caFile = values['edge-ca'];
  const metadata = values.metadata;
  return {
    authtoken,
    edgeAddr,
    ca: caFile === undefined ? undefined : { file: caFile, pem: flag(() => readCa(caFile)) },
    serverName: values['server-name'],
    labels: flag(() => parseLabels(values.label ?? [])),
    forward: flag(() => parseForwardTarget(forwardText)),
    metadata: metadata === undefined ? undefined : flag(() => checkMetadata(metadata)),
    updateDir: values['update-dir'],
    updateCheck: !values['no-update-check'],
    execRestart: !values['no-exec-restart'],
    haConnections: flag(() => parseHaConnections(values['ha-connections'])),
    liveness: flag(() => {
      const read = (name: string) => values[name as 'ping-interval' | 'ping-timeout'];
      return {
        intervalMs: secondsFlag(read, '', 'ping-interval', SESSION_LIVENESS.intervalMs, 3600),
        timeoutMs: secondsFlag(read, '', 'ping-timeout', SESSION_LIVENESS.timeoutMs, 3600),
      };
    }),
  };
}

function parseHaConnections(text: string | undefined): number {
  if (text === undefined) return DEFAULT_HA_CONNECTIONS;
  const count = Number(text);
  if (!/^\d{1,2}$/.test(text) || count < 1 || count > 16)
    throw new Error(`--ha-connections: expected a whole number from 1 to 16, not '${text}'`);
  return count;
}

function readCa(file: string): string {
  try {
    return readEdgeCa(file);
  } catch (error) {
    throw new UsageError(`--edge-ca: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Runs the agent until the edge stops it (0), refuses it (1), or SIGTERM/SIGINT (0). A restart
 * command re-executes the agent — `process.execPath` with the same arguments (the staged update's
 * `dist/cli.js` instead of this one when an update finished), detached with the same stdio — and
 * this process exits 0; with `--no-exec-restart` the agent reconnects in this process instead.
 */
export const agentCommand = defineCommand({
  name: 'agent',
  summary: "carry an edge's tunnel connections to a local service",
  usage: '--edge-addr HOST:PORT --label KEY=VALUE --forward URL [flags]',
  description:
    'Opens a tunnel session to an edge for a tunnel group (its labels) and carries the connections the edge sends to --forward.',
  flags: AGENT_FLAGS,
  footer: `The edge can send: stop (the agent exits 0), restart (the agent re-executes itself with the same
arguments, running a staged update if there is one; not on Windows), update (stage an update).

exit codes: 0 stopped (stop command, SIGTERM, SIGINT), 1 the edge refused the session or the agent
failed, 2 bad flags.

environment:
  EDGEWARD_AUTHTOKEN  the token, when --authtoken is not given
  LOG_LEVEL           pino log level (default info); logs go to stderr`,
  run: async (values) => runAgent(toAgentFlags(values)),
});

async function runAgent(flags: AgentFlags): Promise<number> {
  const { default: pino } = await import('pino');
  const { Agent } = await import('../agent/agent.js');
  const logger = pino(
    {
      level: process.env.LOG_LEVEL ?? 'info',
      base: { pid: process.pid, agent_version: AGENT_VERSION },
      // Belt and braces: nothing logs the token, and were it ever to, it would be masked.
      redact: ['authtoken', '*.authtoken'],
    },
    pino.destination({ dest: 2, sync: true }),
  );
  // The CA file is followed as it changes (a renewed CA, a rotated Secret): each dial reads the
  // current one, so the next connection trusts the new CA and the sessions up stay.
  const caFile = flags.ca?.file;
  const ca =
    flags.ca &&
    watchEdgeCa(flags.ca.file, flags.ca.pem, {
      onChange: (certificates) =>
        logger.info(
          { file: caFile, serials: certificates.map((certificate) => certificate.serialNumber) },
          'reloaded the edge CA: the next dial trusts it, sessions stay',
        ),
      onError: (error) =>
        logger.warn({ err: error }, 'kept the current edge CA: its file changed but could not be used'),
    });
  const agent = new Agent({
    edgeAddr: flags.edgeAddr,
    authtoken: flags.authtoken,
    labels: flags.labels,
    forward: flags.forward,
    agentVersion: AGENT_VERSION,
    restart: flags.execRestart ? 'exit' : 'reconnect',
    haConnections: flags.haConnections,
    liveness: flags.liveness,
    update: { dir: flags.updateDir, enabled: flags.updateCheck },
    ...(flags.metadata === undefined ? {} : { metadata: flags.metadata }),
    ...(ca === undefined ? {} : { ca: ca.current }),
    ...(flags.serverName === undefined ? {} : { serverName: flags.serverName }),
  });
  agent.on('session', (sessionId) => logger.info({ sessionId }, 'session opened'));
  agent.on('sessionClosed', (sessionId, reason) => logger.info({ sessionId, reason }, 'session closed'));
  agent.on('edgeRefused', (reason) =>
    logger.warn({ reason }, 'an edge refused a session; the sessions on other edges carry on'),
  );
  agent.on('draining', (sessionId) =>
    logger.info({ sessionId }, 'the edge is draining the session: opening its replacement elsewhere'),
  );
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
    ca?.close();
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
async function reexec(staged: StagedRelease | undefined, logger: Logger): Promise<number> {
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
