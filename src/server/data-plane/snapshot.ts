import { createHash } from 'node:crypto';
import type { SecretBox } from '../../crypto/secret-box.js';
import type { EdgeConfig, EdgeHttpsEdge, EdgeHttpsRoute } from '../../schemas/edge-config.js';
import { HTTPS_EDGE_ROUTE_MODULES } from '../edge-resources/route-module-kinds.js';
import { parseStoredModules, type StoredModules } from '../edge-resources/stored-modules.js';
import { privateKeySealContext } from '../routes/tls-certificates.js';
import type { Db } from '../store/database.js';

type Snapshot = Omit<EdgeConfig, 'revision'>;

/**
 * Everything an edge needs, read in one go. Reads are not in a transaction: a change committed
 * between two of them is followed by its own change signal and a new snapshot.
 */
export async function buildEdgeConfig(db: Db, secretBox: SecretBox): Promise<EdgeConfig> {
  const [
    credentials,
    sshCredentials,
    policies,
    rules,
    backends,
    addrs,
    cas,
    certificates,
    tcp,
    tls,
    https,
    routes,
    challenges,
    ingresses,
  ] = await Promise.all([
    db.selectFrom('credentials').select(['id', 'token_hash', 'acl']).orderBy('id').execute(),
    db.selectFrom('ssh_credentials').select(['id', 'fingerprint', 'acl']).orderBy('id').execute(),
    db.selectFrom('ip_policies').select(['id']).orderBy('id').execute(),
    db.selectFrom('ip_policy_rules').select(['ip_policy_id', 'action', 'cidr']).orderBy('id').execute(),
    db.selectFrom('tunnel_group_backends').select(['id', 'labels']).orderBy('id').execute(),
    db.selectFrom('reserved_addrs').select(['id', 'addr', 'region']).orderBy('id').execute(),
    db.selectFrom('certificate_authorities').select(['id', 'ca_pem']).orderBy('id').execute(),
    db
      .selectFrom('tls_certificates')
      .select(['id', 'certificate_pem', 'private_key_sealed', 'derived'])
      .orderBy('id')
      .execute(),
    db.selectFrom('tcp_edges').select(['id', 'hostports', 'modules']).orderBy('id').execute(),
    db.selectFrom('tls_edges').select(['id', 'hostports', 'modules']).orderBy('id').execute(),
    db.selectFrom('https_edges').select(['id', 'hostports', 'modules']).orderBy('id').execute(),
    db
      .selectFrom('https_edge_routes')
      .select(['id', 'edge_id', 'match_type', 'match', 'modules'])
      .orderBy('id')
      .execute(),
    db
      .selectFrom('acme_challenges')
      .select(['type', 'domain', 'token', 'key_authorization'])
      .orderBy('token')
      .execute(),
    db.selectFrom('agent_ingresses').select(['region_domains']).orderBy('id').execute(),
  ]);

  const snapshot: Snapshot = {
    credentials: credentials.map((row) => ({
      id: row.id,
      token_hash: row.token_hash,
      acl: JSON.parse(row.acl) as string[],
    })),
    ssh_credentials: sshCredentials.map((row) => ({
      id: row.id,
      fingerprint: row.fingerprint,
      acl: JSON.parse(row.acl) as string[],
    })),
    ip_policies: policies.map((policy) => ({
      id: policy.id,
      rules: rules
        .filter((rule) => rule.ip_policy_id === policy.id)
        .map((rule) => ({ action: rule.action as 'allow' | 'deny', cidr: rule.cidr })),
    })),
    backends: backends.map((row) => ({
      id: row.id,
      labels: JSON.parse(row.labels) as Record<string, string>,
    })),
    reserved_addrs: addrs,
    certificate_authorities: cas,
    tls_certificates: certificates.map((row) => ({
      id: row.id,
      certificate_pem: row.certificate_pem,
      private_key_pem: secretBox.open(row.private_key_sealed, privateKeySealContext(row.id)),
      dns_names: dnsNamesOf(row.derived),
    })),
    tcp_edges: tcp.map(
      (row) => edgeOf(row, ['backend', 'ip_restriction', 'policy']) as EdgeConfig['tcp_edges'][number],
    ),
    tls_edges: tls.map(
      (row) =>
        edgeOf(row, [
          'backend',
          'ip_restriction',
          'mutual_tls',
          'tls_termination',
          'policy',
        ]) as EdgeConfig['tls_edges'][number],
    ),
    https_edges: https.map((row) => ({
      ...(edgeOf(row, ['mutual_tls', 'tls_termination']) as Omit<EdgeHttpsEdge, 'routes'>),
      routes: routes
        .filter((route) => route.edge_id === row.id)
        .map((route) => ({
          id: route.id,
          match_type: route.match_type as EdgeHttpsRoute['match_type'],
          match: route.match,
          modules: routeModulesForEdge(route.id, parseStoredModules(route.modules), secretBox),
        })),
    })),
    acme_challenges: challenges,
    agent_ingress_domains: ingresses.flatMap((row) => JSON.parse(row.region_domains) as string[]),
  };
  // The revision names the content: an unchanged account gives the same revision on every replica.
  const revision = createHash('sha256').update(JSON.stringify(snapshot)).digest('base64url').slice(0, 22);
  return { revision, ...snapshot };
}

/** An edge row in the feed's form: its hostports and the named modules (null when unset). */
function edgeOf(row: { id: string; hostports: string; modules: string }, moduleNames: readonly string[]) {
  const modules = parseStoredModules(row.modules);
  return {
    id: row.id,
    hostports: JSON.parse(row.hostports) as string[],
    ...Object.fromEntries(moduleNames.map((name) => [name, modules[name] ?? null])),
  };
}

/** Each set module in the form the edge reads, secrets opened with the field they were sealed under. */
function routeModulesForEdge(
  routeId: string,
  stored: StoredModules,
  secretBox: SecretBox,
): Record<string, unknown> {
  const open = (field: string, sealed: string) =>
    secretBox.open(sealed, `https_edge_routes:${routeId}:${field}`);
  const modules: Record<string, unknown> = {};
  for (const kind of HTTPS_EDGE_ROUTE_MODULES) {
    const value = stored[kind.name];
    if (value === undefined || value === null) continue;
    modules[kind.name] = kind.toEdge ? kind.toEdge(value, open) : value;
  }
  return modules;
}

function dnsNamesOf(derivedJson: string): string[] {
  const derived = JSON.parse(derivedJson) as { subject_alternative_names?: { dns_names?: string[] } };
  return derived.subject_alternative_names?.dns_names ?? [];
}
