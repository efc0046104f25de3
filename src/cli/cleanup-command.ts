import { parseArgs } from 'node:util';
import { type CleanupMode, cleanup } from '../operator/cleanup/cleanup.js';
import { KubeApi } from '../operator/runtime/kube-api.js';
import { loadKubeConfig } from './kube-config.js';

const HELP = `usage: edgeward cleanup --mode stuck|orphan|delete [--namespace NS ...] [flags]

What to do with the edgeward.dev objects when the operator goes, or is gone:
  stuck    the operator is gone and objects hang in Terminating on its finalizer
           (edgeward.dev/finalizer): take it off them; they go, their server resources stay
  orphan   before removing the operator for good: pause every object and take its finalizer,
           so deleting them later never hangs and never touches the server
  delete   with the operator still running: delete every object and wait until the operator
           has deleted their server resources and let them go (exit 1 naming what is left)

flags:
  --namespace NS     only these namespaces (repeatable; default: all)
  --timeout SECONDS  delete: how long to wait for the operator (default 300)
  --kubeconfig PATH  default: in-cluster, else KUBECONFIG / ~/.kube/config
`;

const MODES: readonly CleanupMode[] = ['stuck', 'orphan', 'delete'];

export async function cleanupCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      mode: { type: 'string' },
      namespace: { type: 'string', multiple: true },
      timeout: { type: 'string', default: '300' },
      kubeconfig: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const mode = values.mode as CleanupMode | undefined;
  if (!mode || !MODES.includes(mode)) throw new Error(`--mode: one of ${MODES.join(', ')} is required`);
  const timeoutSeconds = Number(values.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds < 0) {
    throw new Error(`--timeout: '${values.timeout}' is not a number of seconds`);
  }
  const kubeConfig = loadKubeConfig(values.kubeconfig);
  const kube = new KubeApi(kubeConfig);
  try {
    const report = await cleanup(kube, {
      mode,
      namespaces: values.namespace ?? [],
      timeoutMs: timeoutSeconds * 1000,
      onObject: (line) => process.stdout.write(`${line}\n`),
    });
    process.stdout.write(`cleanup ${mode}: ${report.changed.length} objects changed\n`);
    if (report.left.length === 0) return 0;
    process.stderr.write(
      `edgeward cleanup: ${report.left.length} objects still there after ${timeoutSeconds} s (is the operator running?):\n` +
        report.left.map((line) => `  ${line}\n`).join(''),
    );
    return 1;
  } finally {
    kube.close();
  }
}
