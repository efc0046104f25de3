import type { KubeConfig } from '@kubernetes/client-node';
import { EdgewardClient } from '../client/index.js';
import { registerAgentIngress } from './controllers/agent-ingress/register.js';
import { registerBotUser } from './controllers/bot-user/register.js';
import { registerCertificateAuthority } from './controllers/certificate-authority/register.js';
import { registerEventDestination } from './controllers/event-destination/register.js';
import { registerEventSubscription } from './controllers/event-subscription/register.js';
import { registerHttpsEdge } from './controllers/https-edge/register.js';
import { registerHttpsEdgeRoute } from './controllers/https-edge-route/register.js';
import { registerIpPolicy } from './controllers/ip-policy/register.js';
import { registerReservedAddress } from './controllers/reserved-address/register.js';
import { registerSshCertificateAuthority } from './controllers/ssh-certificate-authority/register.js';
import { registerSshCredential } from './controllers/ssh-credential/register.js';
import { registerSshHostCertificate } from './controllers/ssh-host-certificate/register.js';
import { registerSshUserCertificate } from './controllers/ssh-user-certificate/register.js';
import { registerTcpEdge } from './controllers/tcp-edge/register.js';
import { registerTlsCertificate } from './controllers/tls-certificate/register.js';
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
  registerAgentIngress(manager, api);
  registerCertificateAuthority(manager, api);
  registerTlsCertificate(manager, api);
  registerEventDestination(manager, api);
  registerEventSubscription(manager, api);
  registerIpPolicy(manager, api);
  registerReservedAddress(manager, api);
  registerTunnelCredential(manager, api);
  registerSshCertificateAuthority(manager, api);
  registerSshCredential(manager, api);
  registerSshHostCertificate(manager, api);
  registerSshUserCertificate(manager, api);
  registerTlsEdge(manager, api);
  registerTcpEdge(manager, api);
  registerHttpsEdge(manager, api);
  registerHttpsEdgeRoute(manager, api);
  return { manager, api };
}
