/**
 * The versions of the real Kubernetes parts the tests and the local dev cluster run. Bump them
 * here; `npm run tools` regenerates the wrapper modules and rebuilds into a new cache folder.
 */
export const TOOL_VERSIONS = {
  /** k8s.io/kubernetes: kube-apiserver and kubectl. 1.34+ builds with Go 1.26. */
  kubernetes: 'v1.36.3',
  /** go.etcd.io/etcd/server/v3 */
  etcd: 'v3.6.16',
  /** helm.sh/helm/v3/cmd/helm */
  helm: 'v3.22.0',
  /** github.com/yuin/gopher-lua, Argo CD's Lua: runs the health checks of config/argocd. */
  gopherLua: 'v1.1.2',
} as const;

export type ToolName = 'kube-apiserver' | 'kubectl' | 'etcd' | 'helm' | 'argocd-lua';
export const ALL_TOOLS: readonly ToolName[] = ['etcd', 'kube-apiserver', 'kubectl', 'helm', 'argocd-lua'];
