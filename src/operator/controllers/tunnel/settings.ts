import type { EdgeCa } from '../../../agent/edge-ca.js';
import { packageVersion } from '../../../lib/package-version.js';

/** Where the operator's agents dial: `edgeward operator --edge-addr --edge-ca --edge-server-name`. */
export interface TunnelEdgeSettings {
  /** `host:port` of the edge's tunnel endpoint; a Tunnel's spec.edgeAddr overrides it. */
  addr?: string | undefined;
  /**
   * PEM of the CA the edge's certificate is checked against, or a function giving the current one
   * (`--edge-ca` followed as its file changes), asked at each dial; the system's CAs when absent.
   * Every agent shares it, and it is no part of what restarts one: a new CA is trusted from the
   * next dial, the sessions up stay.
   */
  ca?: EdgeCa | undefined;
  /** The name the edge's certificate must carry; the host of the address by default. */
  serverName?: string | undefined;
}

/** The version the operator's agents report on their sessions: the package's. */
export const OPERATOR_AGENT_VERSION = packageVersion();
