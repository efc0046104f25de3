import type { Flags } from '../lib/flags.js';

/** `--kubeconfig` of the commands that talk to a cluster (read by kube-config.ts's loader). */
export const KUBECONFIG_FLAG = {
  kubeconfig: {
    type: 'string',
    value: 'FILE',
    defaultText: 'in-cluster, else KUBECONFIG or ~/.kube/config',
    help: 'the kubeconfig',
  },
} as const satisfies Flags;
