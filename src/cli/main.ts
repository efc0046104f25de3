/**
 * Each command is loaded when it runs: `edgeward server` never loads the operator's Kubernetes
 * client or the edge, which would cost tens of MiB of memory and start-up time for nothing.
 */
const COMMANDS: Record<string, (argv: string[]) => Promise<number | undefined>> = {
  server: async (argv) => (await import('./server-command.js')).serverCommand(argv),
  edge: async (argv) => (await import('./edge-command.js')).edgeCommand(argv),
  demo: async (argv) => (await import('./demo-command.js')).demoCommand(argv),
  'dev-cluster': async (argv) => (await import('./dev-cluster-command.js')).devClusterCommand(argv),
  tools: async (argv) => (await import('./tools-command.js')).toolsCommand(argv),
  operator: async (argv) => (await import('./operator-command.js')).operatorCommand(argv),
  openapi: async () => (await import('./openapi-command.js')).openApiCommand(),
  crds: async (argv) => (await import('./crds-command.js')).crdsCommand(argv),
  agent: async (argv) => (await import('./agent-command.js')).agentCommand(argv),
  'ensure-keys': async (argv) => (await import('./ensure-keys-command.js')).ensureKeysCommand(argv),
  cleanup: async (argv) => (await import('./cleanup-command.js')).cleanupCommand(argv),
};

const USAGE = `usage: edgeward <command> [flags]

commands:
  server       run the management API, with --edge also an edge (edgeward server --help)
  edge         run the data plane: tunnel sessions, TCP, TLS and SSH listeners (edgeward edge --help)
  demo         start a server and an edge on embedded defaults, carry a request through the edge to a local service
  openapi      print the OpenAPI 3.1 document
  crds         print the operator's CustomResourceDefinitions (edgeward crds --help)
  dev-cluster  start or stop a local etcd + kube-apiserver (edgeward dev-cluster --help)
  operator     run the Kubernetes operator (edgeward operator --help)
  tools        build the Kubernetes test tools (etcd, kube-apiserver, kubectl, helm) into the cache
  agent        carry an edge's tunnel connections to a local service (edgeward agent --help)
  ensure-keys  make generated keys exist once in Kubernetes Secrets (the chart's hook; edgeward ensure-keys --help)
  cleanup      uninstall without stuck objects: release, orphan or delete the edgeward.dev objects (edgeward cleanup --help)
`;

/** Returns an exit code for commands that finish, undefined for ones that keep running. */
export async function runCli(argv: string[]): Promise<number | undefined> {
  const [command, ...rest] = argv;
  const run = command !== undefined && Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (run) return run(rest);
  switch (command) {
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`edgeward: unknown command '${command}'\n${USAGE}`);
      return 2;
  }
}
