import type { AccountEvent } from '../events/outbox.js';
import type { Principal } from './principal.js';

/** Events after which a key may no longer authenticate, or no longer as the same principal. */
const PRINCIPAL_EVENTS: ReadonlySet<string> = new Set([
  'api_key_deleted',
  'bot_user_updated',
  'bot_user_deleted',
]);

export function affectsPrincipals(event: AccountEvent): boolean {
  return PRINCIPAL_EVENTS.has(`${event.resource}_${event.action}`);
}

/** A safety net: a change that somehow went unannounced lingers no longer than this. */
const TTL_MS = 30_000;
/** Enough for every key of a large account; the oldest entries make room beyond it. */
const MAX_ENTRIES = 10_000;

interface Entry {
  principal: Principal;
  expiresAt: number;
}

/**
 * Verified API keys, by token hash, so a request costs no query to authenticate. Whatever can
 * revoke a key (deleting it, deactivating or deleting its bot) calls `invalidate` after its commit:
 * here at once, on other replicas when PostgreSQL delivers the NOTIFY the commit sent. A lookup
 * that began before an invalidation does not store its (possibly stale) answer: the generation it
 * started under is gone. `enabled` false (a replica that cannot hear the others) bypasses the cache.
 */
export class PrincipalCache {
  readonly #entries = new Map<string, Entry>();
  #generation = 0;
  #enabled = true;

  /** The principal verified for `tokenHash`, if it is still known; no load. */
  peek(tokenHash: string): Principal | undefined {
    const cached = this.#entries.get(tokenHash);
    if (!cached) return undefined;
    if (cached.expiresAt > Date.now()) return cached.principal;
    this.#entries.delete(tokenHash);
    return undefined;
  }

  async lookup(tokenHash: string, load: () => Promise<Principal>): Promise<Principal> {
    const known = this.peek(tokenHash);
    if (known) return known;
    const now = Date.now();
    const generation = this.#generation;
    const principal = await load();
    if (this.#enabled && generation === this.#generation) {
      if (this.#entries.size >= MAX_ENTRIES) {
        const oldest = this.#entries.keys().next().value;
        if (oldest !== undefined) this.#entries.delete(oldest);
      }
      this.#entries.set(tokenHash, { principal, expiresAt: now + TTL_MS });
    }
    return principal;
  }

  invalidate(): void {
    this.#generation++;
    this.#entries.clear();
  }

  /** Off while this replica cannot hear the others' invalidations; back on once it can. */
  setEnabled(enabled: boolean): void {
    this.#enabled = enabled;
    this.invalidate();
  }

  get size(): number {
    return this.#entries.size;
  }
}
