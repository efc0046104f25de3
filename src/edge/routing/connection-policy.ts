import { type CompiledPolicy, compilePolicy, type PolicyDocument } from '../../traffic-policy/index.js';

/** Whether a TCP or TLS edge lets a client in: its `policy` module, run once per connection. */
export interface ConnectionPolicy {
  allows(client: { ip: string; port: number }): boolean;
}

export const ALLOW_EVERY_CONNECTION: ConnectionPolicy = { allows: () => true };

/** Refuses every connection: a policy this edge cannot read must not be skipped (fail closed). */
const REFUSE_EVERY_CONNECTION: ConnectionPolicy = { allows: () => false };

/**
 * The edge's policy compiled for the `connection` phase, or the fail-closed policy with the reason
 * when it cannot be compiled (`onProblem` says so in the logs).
 */
export function compileConnectionPolicy(
  module: unknown,
  onProblem: (reason: string) => void,
  onError: (message: string) => void,
): ConnectionPolicy {
  if (module === null || module === undefined) return ALLOW_EVERY_CONNECTION;
  let policy: CompiledPolicy;
  try {
    policy = compilePolicy(module as PolicyDocument, {
      phase: 'connection',
      onError: (error) => onError(error.message),
    });
  } catch (error) {
    onProblem(error instanceof Error ? error.message : String(error));
    return REFUSE_EVERY_CONNECTION;
  }
  if (!policy.enabled) return ALLOW_EVERY_CONNECTION;
  return { allows: (client) => policy.connection({ clientIp: client.ip, clientPort: client.port }).allowed };
}
