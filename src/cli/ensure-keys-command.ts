import type { GeneratedKey, GeneratedMaterial } from '../operator/generated-keys/ensure-keys.js';
import { defineCommand, UsageError } from './command.js';
import { KUBECONFIG_FLAG } from './kubeconfig-flag.js';

const SECRET_ARG = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)\/([-._a-zA-Z0-9]+)=([\x21-\x7e]*)$/;

function parseSecretArg(arg: string): GeneratedKey {
  const match = SECRET_ARG.exec(arg);
  if (!match)
    throw new UsageError(`--secret: '${arg}' is not NAME/KEY=PREFIX (a Secret name, a data key, a prefix)`);
  return { name: match[1] as string, key: match[3] as string, prefix: match[4] as string };
}

const SECRET_KEY_ARG = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)\/([-._a-zA-Z0-9]+)$/;

function parseSecretKeyArg(arg: string, flag: string): { name: string; key: string } {
  const match = SECRET_KEY_ARG.exec(arg);
  if (!match) throw new UsageError(`${flag}: '${arg}' is not NAME/KEY (a Secret name, a data key)`);
  return { name: match[1] as string, key: match[3] as string };
}

function parseLabel(arg: string): [string, string] {
  const at = arg.indexOf('=');
  if (at <= 0) throw new UsageError(`--label: '${arg}' is not KEY=VALUE`);
  return [arg.slice(0, at), arg.slice(at + 1)];
}

export const ensureKeysCommand = defineCommand({
  name: 'ensure-keys',
  summary: "make generated keys exist once in Kubernetes Secrets (the chart's hook)",
  usage: '--secret NAME/KEY=PREFIX [--secret ...] [--tls-secret NAME ...] [flags]',
  description: `Makes each key exist once in a Kubernetes Secret: creates the Secret, or adds the key, with
PREFIX and 256 random bits; a key already there is never changed. The Helm chart runs it in a
pre-install/pre-upgrade hook Job, so the chart itself renders no random value (helm template
gives the same output every time, as Argo CD needs). It also makes, once, the edges' shared
tunnel certificate (--tls-secret, self-signed for --tls-name) and SSH host key
(--ssh-host-key-secret): every edge pod serves the same ones. Values are never printed.`,
  flags: {
    secret: {
      type: 'string',
      value: 'NAME/KEY=PREFIX',
      multiple: true,
      help: 'a key to ensure (repeatable), e.g. edgeward-server-admin-key/admin-api-key=ewk_',
    },
    'tls-secret': {
      type: 'string',
      value: 'NAME',
      help: 'a kubernetes.io/tls Secret to hold a self-signed certificate (tls.crt, tls.key) made once',
    },
    'tls-name': {
      type: 'string',
      value: 'NAME',
      multiple: true,
      help: 'a DNS name or IP of that certificate (repeatable; the first is its common name)',
    },
    'ssh-host-key-secret': {
      type: 'string',
      value: 'NAME/KEY',
      help: 'a Secret key to hold an SSH host key (ECDSA P-256, PEM) made once',
    },
    namespace: {
      type: 'string',
      value: 'NS',
      defaultText: "POD_NAMESPACE, else the kubeconfig's",
      help: "the Secrets' namespace",
    },
    label: {
      type: 'string',
      value: 'K=V',
      multiple: true,
      help: 'a label for Secrets it creates (repeatable)',
    },
    ...KUBECONFIG_FLAG,
  },
  run: async (values) => {
    const keys = (values.secret ?? []).map(parseSecretArg);
    // Loaded here: the X.509 library is not needed by other commands.
    const { sshHostKeyMaterial, tunnelCertificateMaterial } = await import('./generated-edge-material.js');
    const materials: GeneratedMaterial[] = [];
    const tlsSecret = values['tls-secret'];
    if (tlsSecret !== undefined)
      materials.push(tunnelCertificateMaterial(tlsSecret, values['tls-name'] ?? []));
    else if (values['tls-name']?.length) throw new UsageError('--tls-name: goes with --tls-secret');
    const sshHostKeySecret = values['ssh-host-key-secret'];
    if (sshHostKeySecret !== undefined) {
      const { name, key } = parseSecretKeyArg(sshHostKeySecret, '--ssh-host-key-secret');
      materials.push(sshHostKeyMaterial(name, key));
    }
    if (keys.length === 0 && materials.length === 0)
      throw new UsageError('--secret, --tls-secret or --ssh-host-key-secret: at least one is required');
    const labels = Object.fromEntries((values.label ?? []).map(parseLabel));
    const { loadKubeConfig } = await import('./kube-config.js');
    const { KubeApi } = await import('../operator/runtime/kube-api.js');
    const { ensureGeneratedKeys, ensureGeneratedMaterial } = await import(
      '../operator/generated-keys/ensure-keys.js'
    );
    const kubeConfig = loadKubeConfig(values.kubeconfig);
    const namespace =
      values.namespace ??
      process.env.POD_NAMESPACE ??
      kubeConfig.getContextObject(kubeConfig.currentContext)?.namespace;
    if (!namespace)
      throw new UsageError('--namespace: required (no POD_NAMESPACE, no namespace in the kubeconfig)');
    const kube = new KubeApi(kubeConfig);
    try {
      for (const { name, key, outcome } of await ensureGeneratedKeys(kube, namespace, keys, labels)) {
        process.stdout.write(`secret ${namespace}/${name} key ${key}: ${outcome}\n`);
      }
      for (const { name, keys: dataKeys, outcome } of await ensureGeneratedMaterial(
        kube,
        namespace,
        materials,
        labels,
      )) {
        process.stdout.write(`secret ${namespace}/${name} keys ${dataKeys.join(',')}: ${outcome}\n`);
      }
    } finally {
      kube.close();
    }
    return 0;
  },
});
