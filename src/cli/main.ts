import { agentCommand } from './agent-command.js';
import { crdsCommand } from './crds-command.js';
import { demoCommand } from './demo-command.js';
import { devClusterCommand } from './dev-cluster-command.js';
import { edgeCommand } from './edge-command.js';
import { openApiCommand } from './openapi-command.js';
import { operatorCommand } from './operator-command.js';
import { serverCommand } from './server-command.js';
import { toolsCommand } from './tools-command.js';

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
`;

/** Returns an exit code for commands that finish, undefined for ones that keep running. */
export async function runCli(argv: string[]): Promise<number | undefined> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'server':
      return serverCommand(rest);
    case 'edge':
      return edgeCommand(rest);
    case 'demo':
      return demoCommand(rest);
    case 'dev-cluster':
      return devClusterCommand(rest);
    case 'tools':
      return toolsCommand(rest);
    case 'operator':
      return operatorCommand(rest);
    case 'openapi':
      return openApiCommand();
    case 'crds':
      return crdsCommand(rest);
    case 'agent':
      return agentCommand(rest);
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
