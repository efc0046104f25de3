import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseEdgeAddr } from '../agent/options.js';
import { createOperator } from '../operator/operator.js';
import { apiKeyFromFile } from '../operator/runtime/api-key-file.js';
import { RUNTIME_FLAGS, RUNTIME_FLAGS_HELP } from '../operator/runtime/flags.js';
import { createLogger } from '../operator/runtime/logger.js';
import { loadKubeConfig } from './kube-config.js';

const HELP = `usage: edgeward operator --api-url URL [flags]

  --api-url URL                   the edgeward management API (required)
  --api-key-file FILE             file holding the API key, re-read when it changes (a rotated
                                  Secret); default: EDGEWARD_API_KEY
  --kubeconfig FILE               kubeconfig (default: KUBECONFIG, ~/.kube/config or in-cluster)
  --edge-addr HOST:PORT           the edge's tunnel endpoint Tunnel agents dial (a Tunnel's
                                  spec.edgeAddr overrides it); without either a Tunnel waits
  --edge-ca FILE                  PEM of the CA to trust for the edge's certificate (default: the
                                  system's CAs)
  --edge-server-name NAME         the name the edge's certificate must carry (default: the host
                                  of the edge address)
${RUNTIME_FLAGS_HELP}
environment:
  EDGEWARD_API_KEY  the API key, when --api-key-file is not given
  LOG_LEVEL         pino log level (default info)
`;

/** Runs the controllers until SIGTERM/SIGINT (exit 0) or a lost leadership (exit 1, to restart as standby). */
export async function operatorCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'api-url': { type: 'string' },
      'api-key-file': { type: 'string' },
      kubeconfig: { type: 'string' },
      'edge-addr': { type: 'string' },
      'edge-ca': { type: 'string' },
      'edge-server-name': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      ...RUNTIME_FLAGS,
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const apiUrl = values['api-url'];
  if (!apiUrl) throw new Error('--api-url: required');
  const log = createLogger();
  const keyFile = values['api-key-file'];
  // A key file is followed as its Secret rotates; the environment's key is fixed for the process.
  const apiKey = keyFile
    ? apiKeyFromFile(keyFile, {
        onError: (error) =>
          process.stderr.write(`edgeward operator: ${error.message}: ${String(error.cause)}\n`),
      })
    : process.env.EDGEWARD_API_KEY;
  if (!apiKey) throw new Error('--api-key-file: required when EDGEWARD_API_KEY is not set');
  const edgeAddr = values['edge-addr'];
  if (edgeAddr !== undefined) parseEdgeAddr(edgeAddr); // throws naming --edge-addr
  const edge = {
    addr: edgeAddr,
    ca: values['edge-ca'] === undefined ? undefined : await readFile(values['edge-ca'], 'utf8'),
    serverName: values['edge-server-name'],
  };
  const kubeConfig = loadKubeConfig(values.kubeconfig);
  const { manager, api } = createOperator({ kubeConfig, apiUrl, apiKey, flags: values, edge, log });
  manager.installSignalHandlers();
  await manager.start();
  const reason = await manager.done;
  await api.close();
  return reason === 'leadership-lost' ? 1 : 0;
}
