import { parseArgs } from 'node:util';
import { ensureGeneratedKeys, type GeneratedKey } from '../operator/generated-keys/ensure-keys.js';
import { KubeApi } from '../operator/runtime/kube-api.js';
import { loadKubeConfig } from './kube-config.js';

const HELP = `usage: edgeward ensure-keys --secret NAME/KEY=PREFIX [--secret ...] [flags]

Makes each key exist once in a Kubernetes Secret: creates the Secret, or adds the key, with
PREFIX and 256 random bits; a key already there is never changed. The Helm chart runs it in a
pre-install/pre-upgrade hook Job, so the chart itself renders no random value (helm template
gives the same output every time, as Argo CD needs). Values are never printed.

flags:
  --secret NAME/KEY=PREFIX   a key to ensure (repeatable), e.g. edgeward-server-admin-key/admin-api-key=ewk_
  --namespace NS             the Secrets' namespace (default: POD_NAMESPACE, else the kubeconfig's)
  --label K=V                a label for Secrets it creates (repeatable)
  --kubeconfig PATH          default: in-cluster, else KUBECONFIG / ~/.kube/config
`;

const SECRET_ARG = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)\/([-._a-zA-Z0-9]+)=([\x21-\x7e]*)$/;

function parseSecretArg(arg: string): GeneratedKey {
  const match = SECRET_ARG.exec(arg);
  if (!match)
    throw new Error(`--secret: '${arg}' is not NAME/KEY=PREFIX (a Secret name, a data key, a prefix)`);
  return { name: match[1] as string, key: match[3] as string, prefix: match[4] as string };
}

function parseLabel(arg: string): [string, string] {
  const at = arg.indexOf('=');
  if (at <= 0) throw new Error(`--label: '${arg}' is not KEY=VALUE`);
  return [arg.slice(0, at), arg.slice(at + 1)];
}

export async function ensureKeysCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      secret: { type: 'string', multiple: true },
      namespace: { type: 'string' },
      label: { type: 'string', multiple: true },
      kubeconfig: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const keys = (values.secret ?? []).map(parseSecretArg);
  if (keys.length === 0) throw new Error('--secret: at least one is required');
  const labels = Object.fromEntries((values.label ?? []).map(parseLabel));
  const kubeConfig = loadKubeConfig(values.kubeconfig);
  const namespace =
    values.namespace ??
    process.env.POD_NAMESPACE ??
    kubeConfig.getContextObject(kubeConfig.currentContext)?.namespace;
  if (!namespace) throw new Error('--namespace: required (no POD_NAMESPACE, no namespace in the kubeconfig)');
  const kube = new KubeApi(kubeConfig);
  try {
    for (const { name, key, outcome } of await ensureGeneratedKeys(kube, namespace, keys, labels)) {
      process.stdout.write(`secret ${namespace}/${name} key ${key}: ${outcome}\n`);
    }
  } finally {
    kube.close();
  }
  return 0;
}
