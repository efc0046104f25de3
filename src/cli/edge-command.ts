import { parseArgs } from 'node:util';
import pino from 'pino';
import {
  EDGE_FLAGS_HELP,
  type EdgeFlagDefaults,
  edgeFlagOptions,
  TCP_PORT_RANGE_OPTION,
} from './edge-flags.js';
import { startEdgeFromFlags } from './edge-runtime.js';

const DEFAULTS: EdgeFlagDefaults = {
  tunnelAddr: ':4443',
  tlsAddr: ':443',
  sshAddr: ':2222',
  tcpHost: '0.0.0.0',
  metricsAddr: '127.0.0.1:9464',
};

const HELP = `usage: edgeward edge --api-url URL [flags]

The data plane: agents connect here, public traffic to TCP and TLS edges arrives here.

  --api-url URL         the control plane (edgeward server), e.g. http://edgeward:4040
  --data-dir DIR        where the generated tunnel certificate and SSH host key live (default ./edgeward-edge)
${EDGE_FLAGS_HELP('', DEFAULTS)}
environment:
  EDGEWARD_EDGE_KEY     the control plane's edge key (edgeward server --print-edge-key); required
  LOG_LEVEL             pino log level (default info)
`;

export async function edgeCommand(argv: string[]): Promise<number | undefined> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'api-url': { type: 'string' },
      'data-dir': { type: 'string', default: './edgeward-edge' },
      help: { type: 'boolean', short: 'h' },
      ...edgeFlagOptions('', DEFAULTS),
      ...TCP_PORT_RANGE_OPTION,
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const apiUrl = values['api-url'];
  if (!apiUrl) {
    process.stderr.write('edgeward edge: --api-url is required\n');
    return 2;
  }
  const edgeKey = process.env.EDGEWARD_EDGE_KEY;
  if (!edgeKey) {
    process.stderr.write('edgeward edge: EDGEWARD_EDGE_KEY is required (edgeward server --print-edge-key)\n');
    return 2;
  }
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'info' });
  const running = await startEdgeFromFlags(values, '', {
    apiUrl,
    edgeKey,
    dataDir: values['data-dir'] ?? './edgeward-edge',
    logger,
  });
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'draining');
    running.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  return undefined;
}
