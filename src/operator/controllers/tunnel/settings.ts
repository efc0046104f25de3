import { packageVersion } from '../../../lib/package-version.js';

/** Where the operator's agents dial: `edgeward operator --edge-addr --edge-ca --edge-server-name`. */
export interface TunnelEdgeSettings {
  /** `host:port` of the edge's tunnel endpoint; a Tunnel's spec.edgeAddr overrides it. */
  addr?: string | undefined;
  /** PEM of the CA the edge's certificate is checked against; the system's CAs when absent. */
  ca?: string | undefined;
  /** The name the edge's certificate must carry; the host of the address by default. */
  serverName?: string | undefined;
}

/** The version the operator's agents report on their sessions: the package's. */
export const OPERATOR_AGENT_VERSION = packageVersion();
