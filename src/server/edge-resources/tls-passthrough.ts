import type { MutualTlsModuleInput, TlsTerminationModuleInput } from '../../schemas/edge-modules.js';
import { badRequest } from '../errors/api-error.js';
import type { StoredModules } from './stored-modules.js';

/**
 * Where a module change comes from: an edge create/update body (fields `mutual_tls`,
 * `tls_termination.terminate_at`) or the module's own PUT (fields of the module body).
 */
export type ModuleChangeSource = 'body' | 'module';

/**
 * Spec: with `terminate_at: upstream` TLS passes through to the agent, "in which case most other
 * modules are disallowed". mutual_tls needs the client's TLS handshake, which then never reaches
 * the edge, so the two are refused together (whatever their `enabled`: the configuration would be
 * contradictory either way). backend, ip_restriction and policy stay allowed: they act on the
 * connection (where it goes, its source address, connection rules), which the edge still sees.
 * `changed` names the modules the request sets; the message names the field the caller wrote.
 */
export function refuseMutualTlsWithPassthrough(
  modules: StoredModules,
  changed: readonly string[],
  source: ModuleChangeSource,
): void {
  const termination = modules.tls_termination as TlsTerminationModuleInput | undefined | null;
  const mutualTls = modules.mutual_tls as MutualTlsModuleInput | undefined | null;
  if (termination?.terminate_at !== 'upstream' || !mutualTls) return;
  if (changed.includes('mutual_tls')) {
    throw badRequest("mutual_tls: cannot be set while tls_termination.terminate_at is 'upstream'");
  }
  const field = source === 'body' ? 'tls_termination.terminate_at' : 'terminate_at';
  throw badRequest(
    `${field}: cannot be 'upstream' while mutual_tls is set (mutual TLS needs TLS terminated at the edge); remove mutual_tls first`,
  );
}
