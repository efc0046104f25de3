import { type EdgeCaFile, readEdgeCa, watchEdgeCa } from '../agent/edge-ca.js';
import { parseEdgeAddr } from '../agent/options.js';
import {
  type LoadBalancerIngress,
  parseIngressStatusAddresses,
} from '../operator/controllers/ingress/status-address.js';
import { apiKeyFromFile } from '../operator/runtime/api-key-file.js';
import { RUNTIME_FLAGS } from '../operator/runtime/flags.js';
import { defineCommand, UsageError } from './command.js';

/** Runs the controllers until SIGTERM/SIGINT (exit 0) or a lost leadership (exit 1, to restart as standby). */
export const operatorCommand = defineCommand({
  name: 'operator',
  summary: 'run the Kubernetes operator: edgeward.dev objects become API resources',
  usage: '--api-url URL [flags]',
  flags: {
    'api-url': { type: 'string', value: 'URL', help: 'the edgeward management API (required)' },
    'api-key-file': {
      type: 'string',
      value: 'FILE',
      defaultText: 'EDGEWARD_API_KEY',
      help: 'the file holding the API key, re-read when it changes (a rotated Secret)',
    },
    kubeconfig: {
      type: 'string',
      value: 'FILE',
      defaultText: 'KUBECONFIG, ~/.kube/config or in-cluster',
      help: 'the kubeconfig',
    },
    'edge-addr': {
      type: 'string',
      value: 'HOST:PORT',
      help: "the edge's tunnel endpoint Tunnel agents dial (a Tunnel's spec.edgeAddr overrides it); without either a Tunnel waits",
    },
    'edge-ca': {
      type: 'string',
      value: 'FILE',
      defaultText: "the system's CAs",
      help: "PEM of the CA to trust for the edge's certificate, re-read when it changes (a rotated Secret)",
    },
    'edge-server-name': {
      type: 'string',
      value: 'NAME',
      defaultText: 'the host of the edge address',
      help: "the name the edge's certificate must carry",
    },
    'ingress-status-address': {
      type: 'string',
      value: 'HOST_OR_IP[,…]',
      defaultText: "the Ingress's own hosts",
      help: "the edges' public address, written to status.loadBalancer.ingress of Ingresses of the class edgeward (ip or hostname), for external-dns",
    },
    'gateway-api': {
      type: 'string',
      value: 'auto|off',
      defaultText: 'auto',
      help: 'auto: run the GatewayClass controller when the Gateway API CRDs are served at start (install them first, or restart); off: never (another implementation, or another edgeward operator, owns the classes of edgeward.dev/gateway-controller)',
    },
    ...RUNTIME_FLAGS,
  },
  footer: `exit codes: 0 stopped by SIGTERM or SIGINT, 1 leadership lost (restart to stand by) or failed,
2 bad flags.

environment:
  EDGEWARD_API_KEY  the API key, when --api-key-file is not given
  LOG_LEVEL         pino log level (default info)`,
  run: async (values) => {
    const apiUrl = values['api-url'];
    if (!apiUrl) throw new UsageError('--api-url: required');
    const { createOperator } = await import('../operator/operator.js');
    const { createLogger } = await import('../operator/runtime/logger.js');
    const { loadKubeConfig } = await import('./kube-config.js');
    const log = createLogger();
    const keyFile = values['api-key-file'];
    // A key file is followed as its Secret rotates; the environment's key is fixed for the process.
    const apiKey = keyFile
      ? apiKeyFromFile(keyFile, {
          onError: (error) =>
            process.stderr.write(`edgeward operator: ${error.message}: ${String(error.cause)}\n`),
        })
      : process.env.EDGEWARD_API_KEY;
    if (!apiKey) throw new UsageError('--api-key-file: required when EDGEWARD_API_KEY is not set');
    const edgeAddr = values['edge-addr'];
    if (edgeAddr !== undefined) {
      try {
        parseEdgeAddr(edgeAddr);
      } catch (error) {
        throw new UsageError(error instanceof Error ? error.message : String(error), { cause: error });
      }
    }
    const ingress = { statusAddresses: ingressStatusAddresses(values['ingress-status-address']) };
    const gatewayApi = values['gateway-api'] ?? 'auto';
    if (gatewayApi !== 'auto' && gatewayApi !== 'off') {
      throw new UsageError(`--gateway-api: ${JSON.stringify(gatewayApi)} is neither auto nor off`);
    }
    const caFile = values['edge-ca'];
    let ca: EdgeCaFile | undefined;
    if (caFile !== undefined) {
      let first: string;
      try {
        first = readEdgeCa(caFile);
      } catch (error) {
        throw new UsageError(`--edge-ca: ${(error as Error).message}`, { cause: error });
      }
      // Followed as its Secret rotates: agents read it at each dial, so no session is dropped for it.
      ca = watchEdgeCa(caFile, first, {
        onChange: (certificates) =>
          log.info(
            { file: caFile, serials: certificates.map((certificate) => certificate.serialNumber) },
            'reloaded the edge CA: Tunnel agents trust it from their next dial, sessions stay',
          ),
        onError: (error) =>
          log.warn({ err: error }, 'kept the current edge CA: its file changed but could not be used'),
      });
    }
    const edge = { addr: edgeAddr, ca: ca?.current, serverName: values['edge-server-name'] };
    try {
      const kubeConfig = loadKubeConfig(values.kubeconfig);
      const { manager, api } = await createOperator({
        kubeConfig,
        apiUrl,
        apiKey,
        flags: values,
        edge,
        ingress,
        gatewayApi,
        log,
      });
      manager.installSignalHandlers();
      await manager.start();
      const reason = await manager.done;
      await api.close();
      return reason === 'leadership-lost' ? 1 : 0;
    } finally {
      ca?.close();
    }
  },
});

function ingressStatusAddresses(text: string | undefined): LoadBalancerIngress[] | undefined {
  if (text === undefined) return undefined;
  try {
    return parseIngressStatusAddresses(text);
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}
