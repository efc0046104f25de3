import type { CommandGroup } from './command.js';
import { defineCommand, UsageError } from './command.js';

const log = (line: string) => process.stderr.write(`dev-cluster: ${line}\n`);

const DIR_FLAG = {
  dir: {
    type: 'string',
    value: 'DIR',
    default: '.edgeward-dev-cluster',
    help: "the control plane's folder: its kubeconfig, data, logs and process ids",
  },
} as const;

const controlPlane = () => import('../dev-cluster/control-plane.js');

/** `edgeward dev-cluster up|down|env|mint-user`: a local etcd + kube-apiserver for tests and local work. */
export const devClusterCommand: CommandGroup = {
  name: 'dev-cluster',
  summary: 'start or stop a local Kubernetes control plane (etcd + kube-apiserver)',
  description:
    'A real Kubernetes control plane on loopback, built from Go modules, for tests and local work.',
  subcommands: [
    defineCommand({
      name: 'dev-cluster up',
      summary: 'build the tools if missing, start etcd and kube-apiserver, write DIR/kubeconfig',
      description: `Builds the tools if missing, starts etcd and kube-apiserver on free loopback ports, writes
DIR/kubeconfig and returns, leaving both running (logs in DIR/*.log). Prints the
'export KUBECONFIG=...' line to use it.`,
      flags: DIR_FLAG,
      run: async (values) => {
        const plane = await (await controlPlane()).controlPlaneUp(values.dir, log);
        process.stdout.write(`export KUBECONFIG=${plane.kubeconfigPath}\n`);
        return 0;
      },
    }),
    defineCommand({
      name: 'dev-cluster down',
      summary: "stop exactly the processes 'up' started for DIR and remove DIR",
      flags: DIR_FLAG,
      run: async (values) => {
        await (await controlPlane()).controlPlaneDown(values.dir);
        return 0;
      },
    }),
    defineCommand({
      name: 'dev-cluster env',
      summary: "print 'export KUBECONFIG=DIR/kubeconfig'",
      flags: DIR_FLAG,
      run: async (values) => {
        const plane = (await controlPlane()).readControlPlane(values.dir);
        if (!plane) throw new Error(`no control plane in ${values.dir}; run 'edgeward dev-cluster up' first`);
        process.stdout.write(`export KUBECONFIG=${plane.kubeconfigPath}\n`);
        return 0;
      },
    }),
    defineCommand({
      name: 'dev-cluster mint-user',
      summary: 'write a kubeconfig for a non-admin user and print its path',
      usage: '--user NAME [--group G ...] [--dir DIR]',
      flags: {
        ...DIR_FLAG,
        user: { type: 'string', value: 'NAME', help: 'the user name (required)' },
        group: { type: 'string', value: 'G', multiple: true, help: 'a group of the user (repeatable)' },
      },
      run: async (values) => {
        if (!values.user) throw new UsageError('--user: required');
        const path = await (await controlPlane()).mintUser(values.dir, values.user, values.group ?? []);
        process.stdout.write(`${path}\n`);
        return 0;
      },
    }),
  ],
};
