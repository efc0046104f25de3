import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensureTools } from '../../src/dev-cluster/tools.js';
import { tool } from './kubectl.js';

/**
 * The Gateway API CRDs (sigs.k8s.io/gateway-api, TOOL_VERSIONS.gatewayApi) of the experimental
 * channel, which holds the standard one. Applied server-side (the big CRDs are too big for the
 * last-applied annotation of a client-side apply) by the kubernetes global setup, so every test
 * file sees them: cluster-wide and additive, like the Ingress kinds Kubernetes serves anyway.
 *
 * Not applied: the release's `*_vap_safeupgrades.yaml`, a ValidatingAdmissionPolicy (and its
 * binding) that refuses a downgrade or a standard-over-experimental install of the CRDs. It guards
 * people upgrading a cluster by hand; in the tests it would only add a CEL evaluation to every CRD
 * write of every file.
 */
export const GATEWAY_API_CRDS = [
  'backendtlspolicies',
  'gatewayclasses',
  'gateways',
  'grpcroutes',
  'httproutes',
  'listenersets',
  'referencegrants',
  'tcproutes',
  'tlsroutes',
  'udproutes',
].map((plural) => `${plural}.gateway.networking.k8s.io`);

/** Applies the experimental channel's CRDs and waits until the apiserver serves them; idempotent. */
export async function applyGatewayApiCrds(kubeconfig: string, log: (line: string) => void = () => {}) {
  const tools = await ensureTools(['kubectl', 'gateway-api-crds'], log);
  const dir = join(tools['gateway-api-crds'], 'experimental');
  const files = readdirSync(dir).filter((file) => file.endsWith('.yaml') && !file.includes('_vap_'));
  await tool(tools.kubectl, kubeconfig, [
    'apply',
    '--server-side',
    '--field-manager=edgeward-tests',
    ...files.flatMap((file) => ['-f', join(dir, file)]),
  ]);
  await tool(tools.kubectl, kubeconfig, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...GATEWAY_API_CRDS.map((name) => `crd/${name}`),
  ]);
}
