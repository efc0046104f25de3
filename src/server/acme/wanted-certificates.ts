import { isIP } from 'node:net';
import { hostOf, nameMatches } from '../../lib/tls-names.js';
import { parseStoredModules } from '../edge-resources/stored-modules.js';
import type { Db } from '../store/database.js';

/** A certificate the account needs from ACME: who wants it and the names it must cover. */
export interface WantedCertificate {
  /** Stable across restarts: `edge-host:<name>`, or `agent-ingress:<id>`. */
  subject: string;
  domains: string[];
  keyType: 'rsa' | 'ecdsa';
}

/** Why a name an edge serves gets no ACME certificate, said once per name in the logs. */
export interface SkippedName {
  name: string;
  reason: string;
}

/**
 * What the account's edges need: each name an HTTPS edge, or a TLS edge terminating at the edge,
 * serves, unless an uploaded certificate covers it (an upload always wins, so uploading one is how
 * a name opts out), it is outside `domains` (when given: the server's `--acme-domains`), or ACME
 * cannot prove it (wildcards need DNS-01, which the edges cannot answer; IP addresses). One certificate per name: edges of one name share it, and a name removed from
 * one edge does not reissue the others.
 */
export async function wantedCertificates(
  db: Db,
  domains: readonly string[] = [],
): Promise<{ wanted: WantedCertificate[]; skipped: SkippedName[] }> {
  const [https, tls, uploaded, ingresses] = await Promise.all([
    db.selectFrom('https_edges').select(['hostports']).execute(),
    db.selectFrom('tls_edges').select(['hostports', 'modules']).execute(),
    db.selectFrom('tls_certificates').select(['id', 'derived']).execute(),
    db
      .selectFrom('agent_ingresses')
      .select(['id', 'region_domains', 'certificate_management_policy'])
      .where('certificate_management_policy', 'is not', null)
      .orderBy('id')
      .execute(),
  ]);
  const names = new Set<string>();
  for (const row of https)
    for (const hostport of JSON.parse(row.hostports) as string[]) names.add(hostOf(hostport));
  for (const row of tls) {
    const termination = parseStoredModules(row.modules).tls_termination as
      | { enabled?: boolean; terminate_at?: string }
      | null
      | undefined;
    // The same reading as the edge's (src/edge/tls-routes.ts): upstream termination passes through.
    if (termination?.enabled !== false && termination?.terminate_at === 'upstream') continue;
    for (const hostport of JSON.parse(row.hostports) as string[]) names.add(hostOf(hostport));
  }
  const uploadedNames = uploaded
    .map(
      (row) =>
        JSON.parse(row.derived) as {
          issued_at: string | null;
          subject_alternative_names: { dns_names: string[] };
        },
    )
    .filter((derived) => derived.issued_at === null)
    .flatMap((derived) => derived.subject_alternative_names.dns_names);
  const wanted: WantedCertificate[] = [];
  const skipped: SkippedName[] = [];
  for (const name of [...names].sort()) {
    if (name.startsWith('*.')) {
      skipped.push({
        name,
        reason: 'a wildcard needs the DNS-01 challenge, which edges cannot answer; upload a certificate',
      });
    } else if (isIP(name) !== 0) {
      skipped.push({ name, reason: 'an IP address gets no ACME certificate here; upload a certificate' });
    } else if (
      domains.length > 0 &&
      !domains.some((domain) => name === domain || name.endsWith(`.${domain}`))
    ) {
      skipped.push({ name, reason: `it is outside --acme-domains (${domains.join(', ')})` });
    } else if (!uploadedNames.some((pattern) => nameMatches(pattern, name))) {
      wanted.push({ subject: `edge-host:${name}`, domains: [name], keyType: 'ecdsa' });
    }
  }
  // An agent ingress asks for its certificate explicitly (its policy): one certificate for the
  // regional names agents dial, served by the edges' tunnel endpoint.
  for (const ingress of ingresses) {
    const policy = JSON.parse(ingress.certificate_management_policy ?? '{}') as { private_key_type?: string };
    wanted.push({
      subject: agentIngressSubject(ingress.id),
      domains: JSON.parse(ingress.region_domains) as string[],
      keyType: policy.private_key_type === 'ecdsa' ? 'ecdsa' : 'rsa',
    });
  }
  return { wanted, skipped };
}

const AGENT_INGRESS = 'agent-ingress:';

export const agentIngressSubject = (id: string) => `${AGENT_INGRESS}${id}`;

/** The agent ingress a subject belongs to, if it is one's. */
export function agentIngressOf(subject: string): string | undefined {
  return subject.startsWith(AGENT_INGRESS) ? subject.slice(AGENT_INGRESS.length) : undefined;
}
