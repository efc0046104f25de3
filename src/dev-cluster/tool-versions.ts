/**
 * The versions of the real Kubernetes parts the tests and the local dev cluster run. Bump them
 * here; `npm run tools` regenerates the wrapper modules and rebuilds into a new cache folder.
 */
export const TOOL_VERSIONS = {
  /** k8s.io/kubernetes: kube-apiserver and kubectl; for a node also kubelet, kube-proxy, the
   * scheduler, the controller-manager and the pause image's source. 1.34+ builds with Go 1.26. */
  kubernetes: 'v1.36.3',
  /** go.etcd.io/etcd/server/v3 */
  etcd: 'v3.6.16',
  /** helm.sh/helm/v3/cmd/helm */
  helm: 'v3.22.0',
  /** github.com/yuin/gopher-lua, Argo CD's Lua: runs the health checks of config/argocd. */
  gopherLua: 'v1.1.2',
  /**
   * github.com/containerd/containerd/v2, the node's container runtime. Not Debian's 1.6: it does
   * not answer kubelet's RuntimeConfig call, a fallback kubelet 1.37 removes.
   */
  containerd: 'v2.4.2',
  /** github.com/coredns/coredns, the node's cluster DNS (Service names). */
  coredns: 'v1.15.0',
} as const;

/** What every Kubernetes suite needs. */
export type ControlPlaneTool = 'kube-apiserver' | 'kubectl' | 'etcd' | 'helm' | 'argocd-lua';
/** What a node that runs pods adds (`dev-cluster up --node`). */
export type NodeTool =
  | 'kubelet'
  | 'kube-proxy'
  | 'kube-scheduler'
  | 'kube-controller-manager'
  | 'containerd'
  | 'containerd-shim-runc-v2'
  | 'ctr'
  | 'coredns'
  /** The pause (sandbox) image as an OCI archive, built from the Kubernetes source. */
  | 'pause.oci.tar';
export type ToolName = ControlPlaneTool | NodeTool;
export const ALL_TOOLS: readonly ControlPlaneTool[] = [
  'etcd',
  'kube-apiserver',
  'kubectl',
  'helm',
  'argocd-lua',
];
export const NODE_TOOLS: readonly NodeTool[] = [
  'kubelet',
  'kube-proxy',
  'kube-scheduler',
  'kube-controller-manager',
  'containerd',
  'containerd-shim-runc-v2',
  'ctr',
  'coredns',
  'pause.oci.tar',
];
