import { stringify } from 'yaml';
import { PAUSE_IMAGE } from '../tools.js';
import { HOST_ADDRESS, NODE_NAME, POD_SUBNET } from './network.js';

/** Where each part of a node keeps its files, all under the cluster folder's `node/`. */
export interface NodePaths {
  root: string;
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  containerdConfig: string;
  cniConfDir: string;
  cniIpamDir: string;
  kubeletRoot: string;
  kubeletCerts: string;
  kubeletConfig: string;
  kubeletKubeconfig: string;
  podLogs: string;
  resolvConf: string;
  kubeProxyConfig: string;
  corefile: string;
  /** The folder a test's static PersistentVolumes live in. */
  volumes: string;
}

/** TOML, the containerd 2.4 configuration (version 4). */
export function containerdConfig(paths: NodePaths, runc: string, cniBinDir: string): string {
  const q = (value: string) => JSON.stringify(value);
  const opt = `${paths.containerdRoot}/opt`;
  return `version = 4
root = ${q(paths.containerdRoot)}
state = ${q(paths.containerdState)}
# Nothing from /etc/containerd: this node's configuration is this file alone.
imports = []

[plugins]
  [plugins.'io.containerd.server.v1.grpc']
    address = ${q(paths.containerdSocket)}
  [plugins.'io.containerd.server.v1.ttrpc']
    address = ${q(`${paths.containerdSocket}.ttrpc`)}

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      # Built from the Kubernetes source and imported at start: the node pulls from no registry.
      sandbox = ${q(PAUSE_IMAGE)}

  [plugins.'io.containerd.cri.v1.runtime']
    # CAP_SYS_RESOURCE may be missing from every process's bounding set (a VM's choice): then no
    # process may lower an OOM score, and the pause container's -998 fails its start.
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = ${q(runc)}
          Root = ${q(`${paths.containerdState}/runc`)}
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [${q(cniBinDir)}]
      conf_dir = ${q(paths.cniConfDir)}

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'

  [plugins.'io.containerd.nri.v1.nri']
    disable = true

  # Paths containerd would otherwise make under /opt.
  [plugins.'io.containerd.internal.v1.opt']
    path = ${q(opt)}
  [plugins.'io.containerd.image-verifier.v1.bindir']
    bin_dir = ${q(`${opt}/image-verifier/bin`)}
`;
}

/** YAML, kubelet.config.k8s.io/v1beta1. */
export function kubeletConfig(paths: NodePaths, caFile: string): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: HOST_ADDRESS,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      // The apiserver's kubelet client certificate (logs, exec) is signed by the cluster CA.
      x509: { clientCAFile: caFile },
    },
    // Each caller is asked about at the apiserver (SubjectAccessReview): a certificate of the
    // cluster CA is not enough to exec into a pod.
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${paths.containerdSocket}`,
    cgroupDriver: 'cgroupfs',
    // kubelet 1.35+ refuses cgroup v1 hosts unless told otherwise.
    failCgroupV1: false,
    failSwapOn: false,
    // CoreDNS listens on the host's bridge address.
    clusterDNS: [HOST_ADDRESS],
    clusterDomain: 'cluster.local',
    resolvConf: paths.resolvConf,
    podLogsDir: paths.podLogs,
    podCIDR: POD_SUBNET,
    serializeImagePulls: false,
    // A developer's disk fills up; a test node must not evict its pods or collect imported images.
    evictionHard: {
      'memory.available': '1Mi',
      'nodefs.available': '1%',
      'nodefs.inodesFree': '1%',
      'imagefs.available': '1%',
    },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    maxPods: 60,
  });
}

/** YAML, kubeproxy.config.k8s.io/v1alpha1. */
export function kubeProxyConfig(kubeconfigPath: string, ports: { healthz: number; metrics: number }): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: kubeconfigPath },
    hostnameOverride: NODE_NAME,
    mode: 'iptables',
    clusterCIDR: POD_SUBNET,
    bindAddress: HOST_ADDRESS,
    healthzBindAddress: `127.0.0.1:${ports.healthz}`,
    metricsBindAddress: `127.0.0.1:${ports.metrics}`,
    // NodePorts on the bridge alone, never on the machine's own interfaces.
    nodePortAddresses: [POD_SUBNET],
    iptables: {
      // Pod to ClusterIP to a pod on the same bridge: the answer must come back through the host.
      masqueradeAll: true,
      // Would set net.ipv4.conf.all.route_localnet.
      localhostNodePorts: false,
      minSyncPeriod: '0s',
    },
    // Zero leaves the host's conntrack settings as they are.
    conntrack: {
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
      udpTimeout: '0s',
      udpStreamTimeout: '0s',
    },
  });
}

/** The Corefile: Service and pod names of cluster.local, on the bridge address alone. */
export function corefile(kubeconfigPath: string, readyPort: number): string {
  return `.:53 {
    bind ${HOST_ADDRESS}
    errors
    ready 127.0.0.1:${readyPort}
    # Cluster names only: pods reach nothing outside the node, so nothing is forwarded.
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig ${kubeconfigPath}
        pods insecure
    }
}
`;
}
