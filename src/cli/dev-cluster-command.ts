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
const node = () => import('../dev-cluster/node/node.js');

/** `edgeward dev-cluster up|down|env|mint-user`: a local etcd + kube-apiserver for tests and local work. */
export const devClusterCommand: CommandGroup = {
  name: 'dev-cluster',
  summary: 'start or stop a local Kubernetes cluster (etcd + kube-apiserver, optionally a node)',
  description:
    'A real Kubernetes control plane on loopback, built from Go modules, for tests and local work; with --node also a node that runs pods.',
  subcommands: [
    defineCommand({
      name: 'dev-cluster up',
      summary: 'build the tools if missing, start etcd and kube-apiserver, write DIR/kubeconfig',
      description: `Builds the tools if missing, starts etcd and kube-apiserver on free loopback ports, writes
DIR/kubeconfig and returns, leaving both running (logs in DIR/*.log). Prints the
'export KUBECONFIG=...' line to use it.

With --node (root only; for tests and throwaway machines) the cluster also gets a node that
runs pods: containerd and runc, the kubelet, kube-proxy (iptables), the scheduler, the
controller-manager and CoreDNS, pods on the bridge edgeward0 (10.244.77.0/24) that reach the
host and each other only; kube-apiserver then listens on 10.244.77.1. It changes the host
(sysctls, iptables KUBE-* chains, cgroups, mounts, /var/lib/kubelet and other paths): it
records all of it first, and 'down' (or the next 'up --node', after a crash) puts it back.
Load images with 'edgeward dev-cluster load-image'.`,
      flags: {
        ...DIR_FLAG,
        node: { type: 'boolean', help: 'also a node that runs pods (root; changes the host until down)' },
      },
      run: async (values) => {
        const plane = values.node
          ? await (await node()).nodeClusterUp(values.dir, log)
          : await (await controlPlane()).controlPlaneUp(values.dir, log);
        process.stdout.write(`export KUBECONFIG=${plane.kubeconfigPath}\n`);
        return 0;
      },
    }),
    defineCommand({
      name: 'dev-cluster down',
      summary: "stop what 'up' started for DIR, undo a node's host changes, remove DIR",
      flags: DIR_FLAG,
      run: async (values) => {
        await (await node()).clusterDown(values.dir, log);
        return 0;
      },
    }),
    defineCommand({
      name: 'dev-cluster load-image',
      summary: "import OCI archives (npm run image's) into the node's containerd",
      usage: '[--dir DIR] ARCHIVE...',
      description: `Imports image archives into the node of 'up --node', under the name each archive's index
gives (npm run image: docker.io/library/edgeward:<version>, the chart's default image). Pods
then use them with imagePullPolicy IfNotPresent or Never; no registry is involved.`,
      flags: DIR_FLAG,
      positionals: true,
      run: async (values, archives) => {
        if (archives.length === 0) throw new UsageError('ARCHIVE: at least one image archive is required');
        const { importImages, nodeCtr } = await node();
        for (const name of importImages(values.dir, archives, await nodeCtr()))
          process.stdout.write(`${name}\n`);
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
