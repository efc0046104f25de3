import type { KubeConfig } from '@kubernetes/client-node';
import { EdgewardClient } from '../client/index.js';
import { discoverGatewayApi, type GatewayApiDiscovery } from './controllers/gateway-class/discovery.js';
import { OPERATOR_CONTROLLERS, OPERATOR_KINDS, type OperatorSettings } from './kinds.js';
import type { RuntimeFlagValues } from './runtime/flags.js';
import { managerOptionsFromFlags } from './runtime/flags.js';
import { createLogger, type Logger } from './runtime/logger.js';
import { Manager } from './runtime/manager.js';

export interface OperatorOptions {
  kubeConfig: KubeConfig;
  /** Base URL of the edgeward management API. */
  apiUrl: string;
  /** The key, or a function giving the current one (a key file re-read as its Secret rotates). */
  apiKey: string | (() => string);
  /** Parsed `RUNTIME_FLAGS` values. */
  flags: RuntimeFlagValues;
  log?: Logger;
  /** Where Tunnel agents dial (`--edge-addr`, `--edge-ca`, `--edge-server-name`). */
  edge?: OperatorSettings['edge'];
  /** What Ingresses' status says (`--ingress-status-address`). */
  ingress?: OperatorSettings['ingress'];
  /** `--gateway-api`: `auto` (default) discovers GatewayClasses at start; `off` never runs their controller. */
  gatewayApi?: 'auto' | 'off';
}

export interface Operator {
  manager: Manager;
  api: EdgewardClient;
}

/**
 * Builds the manager with every controller registered (not started). Asks the apiserver first
 * whether the Gateway API is served (the GatewayClass controller is registered only then), unless
 * `gatewayApi` is `off`.
 */
export async function createOperator(options: OperatorOptions): Promise<Operator> {
  const log = options.log ?? createLogger();
  const manager = new Manager({
    kubeConfig: options.kubeConfig,
    log,
    ...managerOptionsFromFlags(options.flags),
  });
  let gatewayApi: GatewayApiDiscovery = { served: false };
  if (options.gatewayApi === 'off')
    log.info('Gateway API: --gateway-api=off; the GatewayClass controller is off');
  else gatewayApi = await discoverGatewayApi(manager.api, log);
  const api = new EdgewardClient(
    manager.clientOptions({
      baseUrl: options.apiUrl,
      apiKey: options.apiKey,
      userAgent: 'edgeward-operator',
    }),
  );
  const settings: OperatorSettings = { edge: options.edge, ingress: options.ingress, gatewayApi };
  for (const kind of OPERATOR_KINDS) kind.register(manager, api, settings);
  for (const controller of OPERATOR_CONTROLLERS) controller.register(manager, api, settings);
  return { manager, api };
}
