import type { SecretBox } from '../../crypto/secret-box.js';
import type { Principal } from '../auth/principal.js';
import type { Db } from '../store/database.js';

export interface ServerSettings {
  /**
   * Public URL of the API, no trailing slash; resources' `uri` fields start with it. Undefined when
   * the server listens on every interface without `--base-url`: each request's own scheme and
   * Host header are used then.
   */
  baseUrl: string | undefined;
  /** DNS suffix of reserved TCP addresses, e.g. `tcp.edgeward.dev` -> `us.tcp.edgeward.dev:12345`. */
  tcpAddrDomain: string;
  /** Ports new reserved addresses are given: the edges' `--tcp-port-range` should cover them. */
  tcpPortRange: { min: number; max: number };
  /** Whether the server obtains certificates by ACME (`--acme-directory-url`). */
  acme: boolean;
}

/** Everything a route handler may use. `db` is a transaction for writes. */
export interface RequestContext {
  db: Db;
  principal: Principal;
  operationId: string;
  settings: ServerSettings;
  secretBox: SecretBox;
  /** Absolute `{base_url}{path}`. */
  url(path: string): string;
  now(): string;
  /** Says the request changed nothing (e.g. deleting an unset module), so no event is recorded. */
  markUnchanged(): void;
  isUnchanged(): boolean;
}
