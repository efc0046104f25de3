import type { KubeConfig } from '@kubernetes/client-node';
import { EdgewardClient } from '../client/index.js';
import { registerBotUser } from './controllers/bot-user/register.js';
import { registerCertificateAuthority } from './controllers/certificate-authority/register.js';
import { registerHttpsEdge } from './controllers/https-edge/register.js';
import { registerIpPolicy } from './controllers/ip-policy/register.js';
import { registerReservedAddress } from './controllers/reserved-address/register.js';
import { registerTcpEdge } from './controllers/tcp-edge/register.js';
import { registerTlsEdge } from './controllers/tls-edge/register.js';
import { registerTunnelCredential } from './controllers/tunnel-credential/register.js';
import type { RuntimeFlagValues } from './runtime/flags.js';
import { managerOptionsFromFlags } from './runtime/flags.js';
import { createLogger, type Logger } from './runtime/logger.js';
import { Manager } from './runtime/manager.js';

export interface OperatorOptions {
  kubeConfig: KubeConfig;
  /** Base URL of the edgeward management API. */
  apiUrl: string;
  apiKey: string;
  /** Parsed `RUNTIME_FLAGS` values. */
  flags: RuntimeFlagValues;
  log?: Logger;
}

export interface Operator {
  manager: Manager;
  api: EdgewardClient;
}

/** Builds the manager with every controller registered (not started). */
export function createOperator(options: OperatorOptions): Operator {
  const log = options.log ?? createLogger();
  const manager = new Manager({
    kubeConfig: options.kubeConfig,
    log,
    ...managerOptionsFromFlags(options.flags),
  });
  const api = new EdgewardClient(
    manager.clientOptions({
      baseUrl: options.apiUrl,
      apiKey: options.apiKey,
      userAgent: 'edgeward-operator',
    }),
  );
  registerBotUser(manager, api);
  registerCertificateAuthority(manager, api);
  registerIpPolicy(manager, api);
  registerReservedAddress(manager, api);
  registerTunnelCredential(manager, api);
  registerTlsEdge(manager, api);
  registerTcpEdge(manager, api);
  registerHttpsEdge(manager, api);
  return { manager, api };
}
