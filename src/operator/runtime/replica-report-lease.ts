import { createHash } from 'node:crypto';
import type { Lease } from './leader-election.js';

/*
 * A replica report: a coordination.k8s.io/v1 Lease each replica keeps of its own, saying what it
 * holds in its process (values by key) that the leader must know to write status, e.g. the tunnel
 * sessions of its agents. `holderIdentity` is the replica's leader-election identity; a report not
 * renewed within `leaseDurationSeconds` (on the reader's clock) is stale, as a leader Lease is.
 */

/** Selects the reports of one operator (its leader election id): the label's value. */
export const REPLICA_REPORT_LABEL = 'edgeward.dev/replica-report-of';
/** The entries, as JSON: `{ "<key>": ["<value>", ...] }`. */
export const REPLICA_REPORT_ANNOTATION = 'edgeward.dev/replica-report';
/**
 * Annotations may total 256 KiB per object; the entries stay under this, and what would not fit
 * is left out (and logged), never the whole report.
 */
export const REPLICA_REPORT_MAX_BYTES = 200 * 1024;

/** Values by key, e.g. a Tunnel's `namespace/name` to its session ids. */
export type ReportEntries = Readonly<Record<string, readonly string[]>>;

export interface ParsedReport {
  name: string;
  identity: string;
  durationMs: number;
  /** What changes at every renewal: a report whose renewTime stays still is not being renewed. */
  renewTime: string;
  resourceVersion: string;
  entries: ReportEntries;
}

/** The label value for the reports of `group`: the group itself, or a hash when it is no valid label value. */
export function reportGroupLabel(group: string): string {
  if (/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(group) && group.length <= 63) return group;
  return `sha256-${createHash('sha256').update(group, 'utf8').digest('hex').slice(0, 32)}`;
}

/**
 * `<group>-replica-<identity>`, lowercased and limited to what a Lease name allows (a DNS
 * subdomain of at most 253 characters). The identity is unique per process (pod name + random),
 * so two processes never share a report, and a restarted one starts a new report.
 */
export function reportLeaseName(group: string, identity: string): string {
  const safe = `${group}-replica-${identity}`
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    // Each dot-separated part starts and ends with a letter or digit.
    .replace(/[-.]*\.[-.]*/g, '.')
    .slice(0, 253);
  return safe.replace(/^[^a-z0-9]+/, '').replace(/[^a-z0-9]+$/, '');
}

/** The entries as the annotation's JSON, leaving out whole keys past `maxBytes`; says how many were left out. */
export function encodeEntries(
  entries: ReportEntries,
  maxBytes = REPLICA_REPORT_MAX_BYTES,
): { json: string; omitted: number } {
  const kept: Record<string, readonly string[]> = {};
  let bytes = 2;
  let omitted = 0;
  for (const key of Object.keys(entries).sort()) {
    const values = entries[key] ?? [];
    const size = Buffer.byteLength(`${JSON.stringify(key)}:${JSON.stringify(values)},`, 'utf8');
    if (bytes + size > maxBytes) {
      omitted++;
      continue;
    }
    bytes += size;
    kept[key] = values;
  }
  return { json: JSON.stringify(kept), omitted };
}

/** A report Lease's contents, or undefined when it is no readable report (then it is ignored). */
export function parseReport(lease: Lease): ParsedReport | undefined {
  const name = lease.metadata?.name;
  const identity = lease.spec?.holderIdentity;
  const durationSeconds = lease.spec?.leaseDurationSeconds;
  const text = lease.metadata?.annotations?.[REPLICA_REPORT_ANNOTATION];
  if (!name || !identity || !durationSeconds || text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined; // not ours to repair: a report nobody can read counts as none
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const entries: Record<string, string[]> = {};
  for (const [key, values] of Object.entries(parsed)) {
    if (!Array.isArray(values)) continue;
    entries[key] = values.filter((value): value is string => typeof value === 'string');
  }
  return {
    name,
    identity,
    durationMs: durationSeconds * 1000,
    renewTime: lease.spec?.renewTime ?? '',
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    entries,
  };
}
