import { stringify } from 'yaml';

export interface KubeconfigUser {
  name: string;
  certificatePem: string;
  privateKeyPem: string;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** A kubeconfig with the certificates inline, so the file alone is enough to connect. */
export function kubeconfig(server: string, caPem: string, user: KubeconfigUser): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'edgeward-dev', cluster: { server, 'certificate-authority-data': b64(caPem) } }],
    users: [
      {
        name: user.name,
        user: {
          'client-certificate-data': b64(user.certificatePem),
          'client-key-data': b64(user.privateKeyPem),
        },
      },
    ],
    contexts: [{ name: `${user.name}@edgeward-dev`, context: { cluster: 'edgeward-dev', user: user.name } }],
    'current-context': `${user.name}@edgeward-dev`,
  });
}
