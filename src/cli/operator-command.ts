import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { createOperator } from '../operator/operator.js';
import { RUNTIME_FLAGS, RUNTIME_FLAGS_HELP } from '../operator/runtime/flags.js';

const HELP = `usage: edgeward operator --api-url URL [flags]

  --api-url URL                   the edgeward management API (required)
  --api-key-file FILE             file holding the API key (default: EDGEWARD_API_KEY)
  --kubeconfig FILE               kubeconfig (default: KUBECONFIG, ~/.kube/config or in-cluster)
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
  const apiKey = values['api-key-file']
    ? (await readFile(values['api-key-file'], 'utf8')).trim()
    : process.env.EDGEWARD_API_KEY;
  if (!apiKey) throw new Error('--api-key-file: required when EDGEWARD_API_KEY is not set');
  const kubeConfig = new KubeConfig();
  if (values.kubeconfig) kubeConfig.loadFromFile(values.kubeconfig);
  else kubeConfig.loadFromDefault();
  const { manager, api } = createOperator({ kubeConfig, apiUrl, apiKey, flags: values });
  manager.installSignalHandlers();
  await manager.start();
  const reason = await manager.done;
  await api.close();
  return reason === 'leadership-lost' ? 1 : 0;
}
