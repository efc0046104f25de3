import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { controlPlaneDown, controlPlaneUp } from '../dev-cluster/control-plane.js';
import { ensureTools } from '../dev-cluster/tools.js';
import {
  createEndpointNetwork,
  type EndpointNetwork,
  endpointNetworkUnavailable,
} from '../lib/endpoint-network.js';
import { KIND_DEFINITIONS } from '../operator/kinds.js';
import { KubeApi } from '../operator/runtime/kube-api.js';
import { getThroughHttpsEdge } from './demo-requests.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NAMESPACE = 'demo';
const SAMPLE = join(ROOT, 'config/samples/https-edge.yaml');
const FIELD_MANAGER = 'edgeward-demo';

export interface DemoEdge {
  baseUrl: string;
  adminKey: string;
  /** host:port agents dial. */
  tunnelAddr: string;
  tunnelCaFile: string;
  /** Where the edge serves HTTPS (127.0.0.1). */
  tlsPort: number;
}

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; generation?: number };
  spec?: Record<string, unknown>;
  status?: {
    id?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; observedGeneration?: number }>;
  };
}

/** The API path of an object: core, CRD, or an edgeward kind (plural from the kinds table). */
function pathOf(object: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>): string {
  const plurals: Record<string, string> = {
    Namespace: 'namespaces',
    Service: 'services',
    EndpointSlice: 'endpointslices',
    CustomResourceDefinition: 'customresourcedefinitions',
    ...Object.fromEntries(KIND_DEFINITIONS.map((definition) => [definition.kind, definition.plural])),
  };
  const plural = plurals[object.kind];
  if (!plural) throw new Error(`the demo does not know the kind ${object.kind}`);
  const base = object.apiVersion.includes('/') ? `/apis/${object.apiVersion}` : `/api/${object.apiVersion}`;
  const namespace = object.metadata.namespace ? `/namespaces/${object.metadata.namespace}` : '';
  return `${base}${namespace}/${plural}/${object.metadata.name}`;
}

/** Server-side apply, as `kubectl apply --server-side` does. */
function applyObject(kube: KubeApi, object: KubeObject): Promise<KubeObject> {
  return kube.request<KubeObject>('PATCH', pathOf(object), {
    query: { fieldManager: FIELD_MANAGER, force: true },
    body: object,
    contentType: 'application/apply-patch+yaml',
  });
}

const yamlObjects = (text: string) =>
  parseAllDocuments(text)
    .map((document) => document.toJSON() as KubeObject | null)
    .filter((object): object is KubeObject => object !== null);

/** This machine's first non-loopback IPv4 address: EndpointSlices refuse loopback addresses. */
function hostAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? [])
      if (address.family === 'IPv4' && !address.internal) return address.address;
  }
  return undefined;
}

/**
 * The address the local service listens on and its EndpointSlice names. As root, the root end of
 * a veth pair whose peer sits in a network namespace of the demo's own (src/lib/endpoint-network.ts),
 * so the demo's traffic stays off this machine's interfaces; otherwise (or if `ip` fails) this
 * machine's own address, with why.
 */
function serviceEndpoint():
  | { address: string; network: EndpointNetwork; why?: undefined }
  | { address: string | undefined; network?: undefined; why: string } {
  let why = endpointNetworkUnavailable();
  if (why === undefined) {
    try {
      const network = createEndpointNetwork();
      return { address: network.address, network };
    } catch (error) {
      why = (error as Error).message;
    }
  }
  return { address: hostAddress(), why };
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`the demo timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 250));
  }
}

const readyOf = (object: KubeObject | undefined) =>
  object?.status?.conditions?.find((condition) => condition.type === 'Ready');

/**
 * The demo's Kubernetes half: a dev control plane (etcd and kube-apiserver, built once and cached),
 * the CRDs, `edgeward operator` against the server the demo started, and `config/samples/
 * https-edge.yaml` (a TunnelCredential, an IPPolicy, an HTTPSEdge, its route and a Tunnel) applied
 * in the namespace demo, its Tunnel forwarding to a local service through a Service and its
 * EndpointSlice. Waits until every sample is Ready, sends a request through the edge, prints a
 * table and the commands to try it by hand. Returns how to stop it all.
 */
export async function demoKubernetes(
  edge: DemoEdge,
  dataDir: string,
  say: (line?: string) => void,
  options: { tryItYourself: boolean },
): Promise<() => Promise<void>> {
  const endpoint = serviceEndpoint();
  const { address, network } = endpoint;
  if (!address) {
    say(
      `Kubernetes part skipped: no address for the Service endpoint (${endpoint.why}; and this machine has no non-loopback IPv4 address).`,
    );
    return async () => {};
  }
  const clusterDir = join(dataDir, 'cluster');
  // Stopped in reverse order, each named as it goes: a Ctrl-C must show it is doing something.
  const stops: Array<[string, () => Promise<unknown>]> = [];
  if (network) stops.push(['the endpoint network', async () => network.remove()]);
  const stopAll = async () => {
    for (const [what, stop] of stops.reverse()) {
      const started = Date.now();
      await stop();
      if (what) say(`  stopped ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    }
  };
  try {
    say('Kubernetes: the dev control plane (etcd + kube-apiserver; built once, then cached)...');
    const tools = await ensureTools(['etcd', 'kube-apiserver', 'kubectl'], (line) => say(`  ${line}`));
    const plane = await controlPlaneUp(clusterDir, (line) => say(`  ${line}`));
    stops.push(['the Kubernetes control plane', () => controlPlaneDown(clusterDir)]);
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(plane.kubeconfigPath);
    const kube = new KubeApi(kubeConfig);
    stops.push(['', async () => kube.close()]);

    const crdDir = join(ROOT, 'crds');
    const crds = readdirSync(crdDir)
      .filter((file) => file.endsWith('.edgeward.dev.yaml'))
      .flatMap((file) => yamlObjects(readFileSync(join(crdDir, file), 'utf8')));
    for (const crd of crds) await applyObject(kube, crd);
    for (const crd of crds) {
      await until(`CRD ${crd.metadata.name} Established`, 30_000, async () => {
        const read = await kube.request<KubeObject>('GET', pathOf(crd));
        return read.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
          ? true
          : undefined;
      });
    }
    say(`  CRDs               ${crds.length} kinds of edgeward.dev installed`);

    // The service behind the Tunnel, and what the EndpointSlice controller would write for it.
    const service = createServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const edgeHost = request.headers['x-edge-host']
        ? `, x-edge-host: ${String(request.headers['x-edge-host'])}`
        : '';
      response.end(`hello from the Service web (it saw ${request.method} ${request.url}${edgeHost})\n`);
    });
    service.listen(0, address);
    await once(service, 'listening');
    stops.push(['', () => new Promise((done) => service.close(done))]);
    const servicePort = (service.address() as AddressInfo).port;
    await applyObject(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    await applyObject(kube, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NAMESPACE },
      spec: { ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }] },
    });
    await applyObject(kube, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'web-demo', namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
      ports: [{ name: 'http', port: servicePort, protocol: 'TCP' }],
    } as KubeObject);
    say(
      network
        ? `  endpoint address   ${address}: veth ${network.link}, its peer in network namespace ${network.namespace}`
        : `  endpoint address   ${address}, this machine's own (no veth pair of the demo's: ${endpoint.why})`,
    );
    if (network?.leftoversRemoved.length)
      say(`  (removed what a killed demo or test run left: ${network.leftoversRemoved.join(', ')})`);
    say(`  Service web        endpoint ${address}:${servicePort} (a local HTTP server of the demo)`);

    const operatorLog = join(dataDir, 'operator.log');
    const operator: ChildProcess = spawn(
      process.execPath,
      [
        ...process.execArgv,
        process.argv[1] ?? join(ROOT, 'dist/cli.js'),
        'operator',
        '--api-url',
        edge.baseUrl,
        '--kubeconfig',
        plane.kubeconfigPath,
        '--watch-namespaces',
        NAMESPACE,
        '--edge-addr',
        edge.tunnelAddr,
        '--edge-ca',
        edge.tunnelCaFile,
        '--edge-server-name',
        'localhost',
        '--metrics-addr',
        '0',
        '--probe-addr',
        '0',
      ],
      { env: { ...process.env, EDGEWARD_API_KEY: edge.adminKey }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const log = createWriteStream(operatorLog, { flags: 'a' });
    operator.stdout?.pipe(log);
    operator.stderr?.pipe(log);
    stops.push([
      'the operator',
      async () => {
        if (operator.exitCode === null && operator.signalCode === null) {
          const exited = once(operator, 'exit');
          operator.kill('SIGTERM');
          await exited;
        }
      },
    ]);
    say(`  edgeward operator  pid ${operator.pid}, watching namespace ${NAMESPACE} (log: ${operatorLog})`);

    const samples = yamlObjects(readFileSync(SAMPLE, 'utf8')).map((object) => ({
      ...object,
      metadata: { ...object.metadata, namespace: NAMESPACE },
    }));
    for (const sample of samples) await applyObject(kube, sample);
    say(
      `  applied            config/samples/https-edge.yaml (${samples.length} objects), waiting for Ready...`,
    );
    const ready = [];
    for (const sample of samples) {
      ready.push(
        await until(
          `${sample.kind} ${sample.metadata.name} Ready (see ${operatorLog})`,
          120_000,
          async () => {
            if (operator.exitCode !== null)
              throw new Error(`the operator exited (${operator.exitCode}); see ${operatorLog}`);
            const read = await kube.request<KubeObject>('GET', pathOf(sample));
            const condition = readyOf(read);
            return condition?.status === 'True' && condition.observedGeneration === read.metadata.generation
              ? read
              : undefined;
          },
        ),
      );
    }
    say();
    const kindWidth = Math.max(...ready.map((object) => object.kind.length), 4) + 2;
    const nameWidth = Math.max(...ready.map((object) => object.metadata.name.length), 4) + 2;
    const idWidth = Math.max(...ready.map((object) => (object.status?.id ?? '').length), 9) + 2;
    const row = (kind: string, name: string, id: string, state: string) =>
      `  ${kind.padEnd(kindWidth)}${name.padEnd(nameWidth)}${id.padEnd(idWidth)}${state}`;
    say(row('KIND', 'NAME', 'SERVER ID', 'READY'));
    for (const object of ready) {
      const condition = readyOf(object);
      say(
        row(
          object.kind,
          object.metadata.name,
          object.status?.id ?? '-',
          `${condition?.status} (${condition?.reason})`,
        ),
      );
    }
    say();

    const host = 'web.example.com';
    const url = `https://${host}:${edge.tlsPort}/from/kubernetes`;
    say(`GET ${url}   (the HTTPSEdge, its route and the operator's Tunnel, all from the sample)`);
    const answer = await until('an answer through the HTTPS edge', 30_000, async () => {
      const got = await getThroughHttpsEdge(host, edge.tlsPort, '/from/kubernetes');
      return got.status === 200 ? got : undefined;
    });
    say(
      `  → HTTP ${answer.status}, x-served-by: ${String(answer.headers['x-served-by'])}: ${answer.body.trim()}`,
    );
    if (!options.tryItYourself) return stopAll;
    say();
    say('Try it yourself:');
    say(`  export KUBECONFIG=${plane.kubeconfigPath}`);
    say(`  ${tools.kubectl} get edgeward -n ${NAMESPACE}`);
    say(`  curl -k --resolve ${host}:${edge.tlsPort}:127.0.0.1 ${url}`);
    say(
      `  ${tools.kubectl} get secret -n ${NAMESPACE} web-https-agent-token -o jsonpath='{.data.token}' | base64 -d   # the agent's token`,
    );
    return stopAll;
  } catch (error) {
    await stopAll();
    throw error;
  }
}
