import { defineCommand } from './command.js';

/** `edgeward tools [--regenerate]`: build (once) and print the paths of the Kubernetes test tools. */
export const toolsCommand = defineCommand({
  name: 'tools',
  summary: 'build the Kubernetes test tools (etcd, kube-apiserver, kubectl, helm) into the cache',
  description: `Builds the Kubernetes test tools from Go modules (Go >= 1.26) the first time, caches them in
~/.cache/edgeward/tools (EDGEWARD_TOOLS_CACHE), and prints each tool's path. With --node, also
what 'dev-cluster up --node' runs: the kubelet, kube-proxy, the scheduler, the
controller-manager, containerd, CoreDNS and the pause image (about 20 min the first time). With
--acme, also the ACME tests' tools: Pebble, pebble-challtestsrv and cert-manager's controller.`,
  flags: {
    node: { type: 'boolean', help: "also the tools of a node that runs pods ('dev-cluster up --node')" },
    acme: { type: 'boolean', help: "also the ACME tests' tools (Pebble, cert-manager's controller)" },
    regenerate: {
      type: 'boolean',
      help: "regenerate the Kubernetes module's go.mod from k8s.io/kubernetes first",
    },
  },
  run: async (values) => {
    const { ALL_TOOLS, CERTIFICATE_TOOLS, NODE_TOOLS } = await import('../dev-cluster/tool-versions.js');
    const { ensureTools, regenerateKubernetesWrapper, toolsCacheDir } = await import(
      '../dev-cluster/tools.js'
    );
    const log = (line: string) => process.stderr.write(`tools: ${line}\n`);
    if (values.regenerate) await regenerateKubernetesWrapper(log);
    log(`cache: ${toolsCacheDir()}`);
    const paths = await ensureTools(
      [...ALL_TOOLS, ...(values.node ? NODE_TOOLS : []), ...(values.acme ? CERTIFICATE_TOOLS : [])],
      log,
    );
    for (const [tool, path] of Object.entries(paths)) process.stdout.write(`${tool}\t${path}\n`);
    return 0;
  },
});
