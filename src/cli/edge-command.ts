import { defineCommand, UsageError } from './command.js';
import { type EdgeFlagDefaults, edgeFlags, TCP_PORT_RANGE_FLAG } from './edge-flags.js';

const DEFAULTS: EdgeFlagDefaults = {
  tunnelAddr: ':4443',
  tlsAddr: ':443',
  sshAddr: ':2222',
  tcpHost: '0.0.0.0',
  metricsAddr: '127.0.0.1:9464',
  relayAddr: ':4446',
};

export const edgeCommand = defineCommand({
  name: 'edge',
  summary: 'run an edge (the data plane): tunnel sessions, TCP, TLS, HTTPS and SSH listeners',
  usage: '--api-url URL [flags]',
  description:
    'The data plane: agents connect here, public traffic to TCP, TLS and HTTPS edges arrives here.',
  flags: {
    'api-url': {
      type: 'string',
      value: 'URL',
      help: 'the control plane (edgeward server), e.g. http://edgeward:4040 (required); several replicas comma-separated, tried in turn',
    },
    'data-dir': {
      type: 'string',
      value: 'DIR',
      default: './edgeward-edge',
      help: 'where the generated tunnel certificate and SSH host key live',
    },
    ...edgeFlags('', DEFAULTS),
    ...TCP_PORT_RANGE_FLAG,
  },
  footer: `environment:
  EDGEWARD_EDGE_KEY  the control plane's edge key (edgeward server --print-edge-key); required
  LOG_LEVEL          pino log level (default info)`,
  run: async (values) => {
    const apiUrlText = values['api-url'];
    if (!apiUrlText) throw new UsageError('--api-url: required');
    const apiUrl = apiUrlText.split(',').map((url) => url.trim());
    for (const url of apiUrl) {
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
        throw new UsageError(`--api-url: '${url}' is not an http:// or https:// URL`);
    }
    const edgeKey = process.env.EDGEWARD_EDGE_KEY;
    if (!edgeKey) throw new UsageError('EDGEWARD_EDGE_KEY is required (edgeward server --print-edge-key)');
    const { default: pino } = await import('pino');
    const { startEdgeFromFlags } = await import('./edge-runtime.js');
    const logger = pino({ level: process.env.LOG_LEVEL ?? 'info' });
    const running = await startEdgeFromFlags(values, '', {
      apiUrl,
      edgeKey,
      dataDir: values['data-dir'],
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
  },
});
