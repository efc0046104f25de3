import { normalizeIp } from '../routing/ip-policy.js';

/** Gives back a slot taken by `PerSourceLimit.acquire`; calling it again does nothing. */
export type ReleaseSlot = () => void;

/**
 * Counts what each source address holds (e.g. connections still in their handshake) and refuses
 * one more once an address holds `max`. An IPv4 client reaching a dual-stack listener
 * (`::ffff:192.0.2.7`) counts as its IPv4 address.
 */
export class PerSourceLimit {
  readonly #held = new Map<string, number>();

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new Error(`per-source limit: ${max} is not a count ≥ 1`);
  }

  /** A slot for one more from `address`, or undefined when it already holds `max`. */
  acquire(address: string): ReleaseSlot | undefined {
    const source = normalizeIp(address);
    const held = this.#held.get(source) ?? 0;
    if (held >= this.max) return undefined;
    this.#held.set(source, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#held.get(source) ?? 1) - 1;
      // Forget an address that holds nothing, so the map stays as small as what is open.
      if (left > 0) this.#held.set(source, left);
      else this.#held.delete(source);
    };
  }

  /**
   * A slot for a new connection, or undefined after closing it and telling `refused` why (its
   * address already holds `max` unauthenticated connections).
   */
  admit(
    socket: { remoteAddress?: string | undefined; destroy(): void },
    refused: (ip: string, reason: string) => void,
  ): { ip: string; release: ReleaseSlot } | undefined {
    const ip = normalizeIp(socket.remoteAddress ?? 'unknown');
    const release = this.acquire(ip);
    if (release) return { ip, release };
    socket.destroy();
    refused(ip, `${this.max} connections from this address are already authenticating`);
    return undefined;
  }

  /** How many slots `address` holds now. */
  held(address: string): number {
    return this.#held.get(normalizeIp(address)) ?? 0;
  }
}
