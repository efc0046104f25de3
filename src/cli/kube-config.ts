import { KubeConfig } from '@kubernetes/client-node';

/** The kubeconfig of `--kubeconfig`, else in-cluster, KUBECONFIG or ~/.kube/config (client-node's order). */
export function loadKubeConfig(path: string | undefined): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (path) kubeConfig.loadFromFile(path);
  else kubeConfig.loadFromDefault();
  return kubeConfig;
}
