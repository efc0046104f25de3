import type { CleanupMode } from '../operator/cleanup/cleanup.js';
import { defineCommand, UsageError } from './command.js';
import { KUBECONFIG_FLAG } from './kubeconfig-flag.js';

const MODES: readonly CleanupMode[] = ['stuck', 'orphan', 'delete'];

export const cleanupCommand = defineCommand({
  name: 'cleanup',
  summary: 'uninstall without stuck objects: release, orphan or delete the edgeward.dev objects',
  usage: '--mode stuck|orphan|delete [--namespace NS ...] [flags]',
  description: `What to do with the edgeward.dev objects when the operator goes, or is gone:
  stuck    the operator is gone and objects hang in Terminating on its finalizer
           (edgeward.dev/finalizer): take it off them; they go, their server resources stay
  orphan   before removing the operator for good: pause every object and take its finalizer,
           so deleting them later never hangs and never touches the server
  delete   with the operator still running: delete every object and wait until the operator
           has deleted their server resources and let them go (exit 1 naming what is left)`,
  flags: {
    mode: { type: 'string', value: 'MODE', help: `one of ${MODES.join(', ')} (required)` },
    namespace: {
      type: 'string',
      value: 'NS',
      multiple: true,
      defaultText: 'all',
      help: 'only these namespaces (repeatable)',
    },
    timeout: {
      type: 'string',
      value: 'SECONDS',
      default: '300',
      help: 'delete: how long to wait for the operator',
    },
    ...KUBECONFIG_FLAG,
  },
  run: async (values) => {
    const mode = values.mode as CleanupMode | undefined;
    if (!mode || !MODES.includes(mode))
      throw new UsageError(`--mode: one of ${MODES.join(', ')} is required`);
    const timeoutSeconds = Number(values.timeout);
    if (!Number.isFinite(timeoutSeconds) || timeoutSeconds < 0) {
      throw new UsageError(`--timeout: '${values.timeout}' is not a number of seconds`);
    }
    const { loadKubeConfig } = await import('./kube-config.js');
    const { KubeApi } = await import('../operator/runtime/kube-api.js');
    const { cleanup } = await import('../operator/cleanup/cleanup.js');
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
  },
});
