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
  /**
   * github.com/letsencrypt/pebble/v2, Let's Encrypt's test ACME server, and its pebble-challtestsrv
   * (the DNS server Pebble's validation authority asks): the ACME tests' certificate authority.
   */
  pebble: 'v2.10.3',
  /**
   * github.com/cert-manager/cert-manager: its controller, run out of cluster. The release's own
   * main (cmd/controller) is a nested module no proxy serves, so go-modules/cert-manager-controller
   * wraps the controllers of the published module; its CRDs ship in the module's deploy/crds.
   */
  certManager: 'v1.21.2',
  /**
   * sigs.k8s.io/gateway-api: the Gateway API CRDs (the module's config/crd/standard and
   * config/crd/experimental), which the operator's GatewayClass controller reconciles.
   */
  gatewayApi: 'v1.6.3',
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
/** What the ACME tests add: a test certificate authority, and cert-manager as a client of it. */
export type CertificateTool =
  | 'pebble'
  | 'pebble-challtestsrv'
  /** Pebble's test certificates from its module: the minica root and the localhost pair it serves. */
  | 'pebble-certs'
  | 'cert-manager-controller'
  /**
   * The release's CustomResourceDefinitions, a folder of YAML files; apply them server-side (three
   * are too big for the last-applied annotation of a client-side apply).
   */
  | 'cert-manager-crds';
/**
 * The Gateway API CRDs: a folder holding `standard/` and `experimental/` (the release's two
 * channels, each with its `*_vap_safeupgrades.yaml` admission policy); apply them server-side.
 */
export type GatewayApiTool = 'gateway-api-crds';
export type ToolName = ControlPlaneTool | NodeTool | CertificateTool | GatewayApiTool;
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
export const CERTIFICATE_TOOLS: readonly CertificateTool[] = [
  'pebble',
  'pebble-challtestsrv',
  'pebble-certs',
  'cert-manager-controller',
  'cert-manager-crds',
];
