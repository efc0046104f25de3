import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type GeneratedCertificate, issueCertificate } from '../crypto/x509.js';

export interface ClusterPki {
  dir: string;
  ca: GeneratedCertificate;
  caFile: string;
  servingCertFile: string;
  servingKeyFile: string;
  /** Private key that signs service-account tokens. */
  serviceAccountKeyFile: string;
  /** Its public half (as a certificate), which verifies them. */
  serviceAccountPublicFile: string;
  admin: GeneratedCertificate;
  /** etcd's serving certificate, and the apiserver's client certificate for it (etcd trusts only the CA's). */
  etcd: { servingCertFile: string; servingKeyFile: string; clientCertFile: string; clientKeyFile: string };
  /** The apiserver's client certificate for kubelets (logs, exec), when made for a node. */
  kubeletClient?: { certFile: string; keyFile: string };
}

export interface PkiOptions {
  /** More addresses the serving certificate names: a node's bridge address, the `kubernetes` ClusterIP. */
  servingIps?: string[];
  /** Also a client certificate the apiserver presents to kubelets. */
  kubeletClient?: boolean;
}

const VALID_DAYS = 365;

function write(path: string, text: string, mode = 0o600): string {
  writeFileSync(path, text, { mode });
  return path;
}

/**
 * The control plane's certificates, as envtest makes them: one CA, a serving certificate for
 * 127.0.0.1/localhost, a service-account signing key, and an admin client certificate in
 * `system:masters`. Made once per cluster folder.
 */
export async function createPki(clusterDir: string, options: PkiOptions = {}): Promise<ClusterPki> {
  const dir = join(clusterDir, 'pki');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = await issueCertificate({
    commonName: 'edgeward-dev-cluster-ca',
    validDays: VALID_DAYS,
    isCa: true,
  });
  const serving = await issueCertificate({
    commonName: 'kube-apiserver',
    validDays: VALID_DAYS,
    usages: ['server'],
    dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
    ips: ['127.0.0.1', ...(options.servingIps ?? [])],
    issuer: ca,
  });
  // A service-account signing key is any key pair; a CA-less certificate key serves.
  const serviceAccount = await issueCertificate({ commonName: 'service-accounts', validDays: VALID_DAYS });
  const admin = await issueCertificate({
    commonName: 'edgeward-admin',
    organizations: ['system:masters'],
    validDays: VALID_DAYS,
    usages: ['client'],
    issuer: ca,
  });
  write(join(dir, 'ca.key'), ca.privateKeyPem);
  // etcd on loopback with client certificates: no local user reaches the cluster's store around the
  // apiserver's authorization (with a node, that would be root on the host).
  const etcdServing = await issueCertificate({
    commonName: 'etcd',
    validDays: VALID_DAYS,
    usages: ['server'],
    dnsNames: ['localhost'],
    ips: ['127.0.0.1'],
    issuer: ca,
  });
  const etcdClient = await issueCertificate({
    commonName: 'kube-apiserver-etcd-client',
    validDays: VALID_DAYS,
    usages: ['client'],
    issuer: ca,
  });
  const etcd = {
    servingCertFile: write(join(dir, 'etcd.crt'), etcdServing.certificatePem, 0o644),
    servingKeyFile: write(join(dir, 'etcd.key'), etcdServing.privateKeyPem),
    clientCertFile: write(join(dir, 'apiserver-etcd-client.crt'), etcdClient.certificatePem, 0o644),
    clientKeyFile: write(join(dir, 'apiserver-etcd-client.key'), etcdClient.privateKeyPem),
  };
  let kubeletClient: ClusterPki['kubeletClient'];
  if (options.kubeletClient) {
    const client = await issueCertificate({
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      validDays: VALID_DAYS,
      usages: ['client'],
      issuer: ca,
    });
    kubeletClient = {
      certFile: write(join(dir, 'apiserver-kubelet-client.crt'), client.certificatePem, 0o644),
      keyFile: write(join(dir, 'apiserver-kubelet-client.key'), client.privateKeyPem),
    };
  }
  write(join(dir, 'admin.crt'), admin.certificatePem);
  write(join(dir, 'admin.key'), admin.privateKeyPem);
  return {
    dir,
    ca,
    caFile: write(join(dir, 'ca.crt'), ca.certificatePem, 0o644),
    servingCertFile: write(join(dir, 'apiserver.crt'), serving.certificatePem, 0o644),
    servingKeyFile: write(join(dir, 'apiserver.key'), serving.privateKeyPem),
    serviceAccountKeyFile: write(join(dir, 'service-account.key'), serviceAccount.privateKeyPem),
    serviceAccountPublicFile: write(join(dir, 'service-account.crt'), serviceAccount.certificatePem, 0o644),
    admin,
    etcd,
    kubeletClient,
  };
}

/** The cluster CA of a folder made by `createPki`, to sign more client certificates. */
export function loadCa(clusterDir: string): GeneratedCertificate {
  const dir = join(clusterDir, 'pki');
  if (!existsSync(join(dir, 'ca.key')))
    throw new Error(`${clusterDir} has no dev-cluster CA (run dev-cluster up first)`);
  return {
    certificatePem: readFileSync(join(dir, 'ca.crt'), 'utf8'),
    privateKeyPem: readFileSync(join(dir, 'ca.key'), 'utf8'),
  };
}
