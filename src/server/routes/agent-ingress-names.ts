import { createHash } from 'node:crypto';
import { reservedAddrRegions } from '../../schemas/reserved-addrs.js';

/**
 * The DNS names the service derives for an agent ingress domain. Both are pure functions of the
 * domain — no randomness, no server setting — so the same domain gets the same names on every
 * server and every restart; the route also stores them at creation, so a later change here never
 * moves the NS delegation of an existing ingress.
 */

/** The service's authoritative nameservers: `ns1.edgeward-dns.net` .. `ns16.edgeward-dns.net`. */
export const NAMESERVER_DOMAIN = 'edgeward-dns.net';
const NAMESERVER_POOL_SIZE = 16;
/** Four NS records, like common DNS hosting: enough redundancy, few enough to type by hand. */
export const NS_TARGETS_PER_DOMAIN = 4;

/** Regional agent ingress domains are `tunnel.<region>.<domain>`, e.g. `tunnel.eu.example.com`. */
export const REGION_DOMAIN_LABEL = 'tunnel';

/**
 * Four distinct nameservers of the pool, chosen by a partial Fisher–Yates shuffle driven by the
 * SHA-256 of the domain (spreading domains over the pool), listed in pool order.
 */
export function nsTargetsFor(domain: string): string[] {
  const digest = createHash('sha256').update(domain, 'utf8').digest();
  const pool = Array.from({ length: NAMESERVER_POOL_SIZE }, (_, index) => index + 1);
  for (let i = 0; i < NS_TARGETS_PER_DOMAIN; i++) {
    const j = i + ((digest[i] ?? 0) % (NAMESERVER_POOL_SIZE - i));
    [pool[i], pool[j]] = [pool[j] as number, pool[i] as number];
  }
  return pool
    .slice(0, NS_TARGETS_PER_DOMAIN)
    .sort((a, b) => a - b)
    .map((n) => `ns${n}.${NAMESERVER_DOMAIN}`);
}

/** One regional domain per region, in the service's region order (au, eu, ap, us, jp, in, sa). */
export function regionDomainsFor(domain: string): string[] {
  return reservedAddrRegions.map((region) => `${REGION_DOMAIN_LABEL}.${region}.${domain}`);
}
