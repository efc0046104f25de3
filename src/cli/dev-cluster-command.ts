import { parseArgs } from 'node:util';
import {
  controlPlaneDown,
  controlPlaneUp,
  mintUser,
  readControlPlane,
} from '../dev-cluster/control-plane.js';

const HELP = `usage: edgeward dev-cluster <up|down|env|mint-user> --dir DIR

  up          build the tools if missing, start etcd and kube-apiserver on free loopback ports,
              write DIR/kubeconfig and return, leaving both running (logs in DIR/*.log)
  down        stop exactly the processes 'up' started for DIR and remove DIR
  env         print 'export KUBECONFIG=DIR/kubeconfig'
  mint-user   write a kubeconfig for a non-admin user: --user NAME [--group G ...]
`;

const log = (line: string) => process.stderr.write(`dev-cluster: ${line}\n`);

export async function devClusterCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      dir: { type: 'string', default: '.edgeward-dev-cluster' },
      user: { type: 'string' },
      group: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help || action === undefined) {
    process.stdout.write(HELP);
    return values.help ? 0 : 2;
  }
  switch (action) {
    case 'up': {
      const plane = await controlPlaneUp(values.dir, log);
      process.stdout.write(`export KUBECONFIG=${plane.kubeconfigPath}\n`);
      return 0;
    }
    case 'down':
      await controlPlaneDown(values.dir);
      return 0;
    case 'env': {
      const plane = readControlPlane(values.dir);
      if (!plane) throw new Error(`no control plane in ${values.dir}; run 'edgeward dev-cluster up' first`);
      process.stdout.write(`export KUBECONFIG=${plane.kubeconfigPath}\n`);
      return 0;
    }
    case 'mint-user': {
      if (!values.user) throw new Error('mint-user needs --user NAME');
      process.stdout.write(`${await mintUser(values.dir, values.user, values.group ?? [])}\n`);
      return 0;
    }
    default:
      process.stderr.write(`edgeward dev-cluster: unknown action '${action}'\n${HELP}`);
      return 2;
  }
}
