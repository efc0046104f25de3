import type { FastifyInstance } from 'fastify';
import { rfc3339 } from '../../lib/rfc3339.js';
import {
  type AgentIngress,
  type AgentIngressCertPolicy,
  type AgentIngressCertPolicyInput,
  type AgentIngressCertStatus,
  agentIngress,
  agentIngressCreate,
  agentIngressList,
  agentIngressUpdate,
} from '../../schemas/agent-ingresses.js';
import { conflict } from '../errors/api-error.js';
import type { Db } from '../store/database.js';
import type { Row } from '../store/rows.js';
import { nsTargetsFor, regionDomainsFor } from './agent-ingress-names.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { newDescribedRow } from './described-row.js';

const RETRY_AFTER_MS = 60 * 60 * 1000;

const AGENT_INGRESSES = defineCollection({
  table: 'agent_ingresses',
  path: '/agent_ingresses',
  kind: 'agent ingress',
  name: 'AgentIngress',
  plural: 'AgentIngresses',
  tag: 'Agent ingresses',
  eventResource: 'agent_ingress',
  listKey: 'ingresses',
  item: agentIngress,
  list: agentIngressList,
  toWire: agentIngressToWire,
});

export function agentIngressToWire(row: Row<'agent_ingresses'>): AgentIngress {
  return {
    id: row.id,
    // The spec shows agent ingresses with a relative uri, unlike every other resource.
    uri: `${AGENT_INGRESSES.path}/${row.id}`,
    created_at: row.created_at,
    description: row.description,
    // The spec: metadata is absent from responses when unset (description is "" instead).
    ...(row.metadata === '' ? {} : { metadata: row.metadata }),
    domain: row.domain,
    ns_targets: JSON.parse(row.ns_targets) as string[],
    region_domains: JSON.parse(row.region_domains) as string[],
    certificate_management_policy: parseNullable<AgentIngressCertPolicy>(row.certificate_management_policy),
    certificate_management_status: parseNullable<AgentIngressCertStatus>(row.certificate_management_status),
  };
}

function parseNullable<T>(json: string | null): T | null {
  return json === null ? null : (JSON.parse(json) as T);
}

export function normalizeCertPolicy(policy: AgentIngressCertPolicyInput): AgentIngressCertPolicy {
  return { authority: policy.authority ?? 'letsencrypt', private_key_type: policy.private_key_type ?? 'rsa' };
}

/**
 * The certificate status right after a policy is set: a job at its start, with `renews_at` equal to
 * the start (the first "renewal" is the still-pending first issuance) and no `error_code` (nothing
 * has failed yet). With ACME on, the server's certificate manager takes the job over within seconds
 * (src/server/acme/) and writes what it does here; without it no certificate is ever requested, and
 * the status says so — with the NS records the domain needs either way — retried hourly.
 */
export function pendingCertStatus(row: {
  domain: string;
  ns_targets: string[];
  startedAt: string;
  acme: boolean;
}): AgentIngressCertStatus {
  const records = `the NS records of ${row.domain} must point at ${row.ns_targets.join(', ')}`;
  return {
    renews_at: row.startedAt,
    provisioning_job: {
      msg: row.acme
        ? `waiting for its first ACME order; ${records}`
        : `no certificate is requested: this server has no ACME CA (edgeward server --acme-directory-url); ${records}`,
      started_at: row.startedAt,
      retries_at: rfc3339(new Date(Date.parse(row.startedAt) + RETRY_AFTER_MS)),
    },
  };
}

/** The two certificate columns for a policy set at `startedAt`; null disables both. */
function certColumns(
  policy: AgentIngressCertPolicyInput | null | undefined,
  domain: string,
  nsTargets: string[],
  startedAt: string,
  acme: boolean,
): Pick<Row<'agent_ingresses'>, 'certificate_management_policy' | 'certificate_management_status'> {
  if (!policy) return { certificate_management_policy: null, certificate_management_status: null };
  return {
    certificate_management_policy: JSON.stringify(normalizeCertPolicy(policy)),
    certificate_management_status: JSON.stringify(
      pendingCertStatus({ domain, ns_targets: nsTargets, startedAt, acme }),
    ),
  };
}

/**
 * Inserts unless another agent ingress has the domain. `ON CONFLICT DO NOTHING` on the UNIQUE
 * column keeps concurrent creates apart on SQLite and PostgreSQL alike without aborting the
 * transaction; the loser gets a 409 naming the existing ingress.
 */
async function insertUniqueDomain(db: Db, row: Row<'agent_ingresses'>): Promise<void> {
  const result = await db
    .insertInto('agent_ingresses')
    .values(row)
    .onConflict((oc) => oc.column('domain').doNothing())
    .executeTakeFirst();
  if (Number(result.numInsertedOrUpdatedRows ?? 0n) === 1) return;
  const existing = await db
    .selectFrom('agent_ingresses')
    .select('id')
    .where('domain', '=', row.domain)
    .executeTakeFirst();
  throw conflict(`domain: ${row.domain} is already an agent ingress (${existing?.id ?? 'being created'})`);
}

export async function agentIngressRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, AGENT_INGRESSES, {
    summary: 'Create an agent ingress on a domain the caller owns',
    body: agentIngressCreate,
    handler: async ({ body, ctx }) => {
      const described = newDescribedRow(AGENT_INGRESSES.idPrefix, body, ctx);
      const nsTargets = nsTargetsFor(body.domain);
      const row: Row<'agent_ingresses'> = {
        ...described,
        domain: body.domain,
        ns_targets: JSON.stringify(nsTargets),
        region_domains: JSON.stringify(regionDomainsFor(body.domain)),
        ...certColumns(
          body.certificate_management_policy,
          body.domain,
          nsTargets,
          described.created_at,
          ctx.settings.acme,
        ),
      };
      await insertUniqueDomain(ctx.db, row);
      return agentIngressToWire(row);
    },
  });
  defineUpdateRoute(app, AGENT_INGRESSES, {
    summary: 'Update the description, metadata or certificate management policy of an agent ingress',
    body: agentIngressUpdate,
    toChanges: (body, row, ctx) => {
      const { certificate_management_policy: policy, ...described } = body;
      if (policy === undefined) return described;
      const nsTargets = JSON.parse(row.ns_targets) as string[];
      const columns = certColumns(policy, row.domain, nsTargets, ctx.now(), ctx.settings.acme);
      // Re-sending the policy in force must not restart its provisioning job.
      if (columns.certificate_management_policy === row.certificate_management_policy) return described;
      return { ...described, ...columns };
    },
  });
  defineCollectionReads(app, AGENT_INGRESSES);
}
