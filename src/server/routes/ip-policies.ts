import type { FastifyInstance } from 'fastify';
import {
  type IpPolicy,
  type IpPolicyRule,
  ipPolicy,
  ipPolicyCreate,
  ipPolicyList,
  ipPolicyRule,
  ipPolicyRuleCreate,
  ipPolicyRuleList,
  ipPolicyRuleUpdate,
  ipPolicyUpdate,
} from '../../schemas/ip-policies.js';
import { badReference } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { findRow, insertRow, type Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { deleteDependents } from './delete-dependents.js';
import { describedToWire, newDescribedRow } from './described-row.js';

const TAG = 'IP policies';

const IP_POLICIES = defineCollection({
  table: 'ip_policies',
  path: '/ip_policies',
  kind: 'IP policy',
  name: 'IPPolicy',
  plural: 'IPPolicies',
  tag: TAG,
  eventResource: 'ip_policy',
  listKey: 'ip_policies',
  item: ipPolicy,
  list: ipPolicyList,
  toWire: ipPolicyToWire,
});

const IP_POLICY_RULES = defineCollection({
  table: 'ip_policy_rules',
  path: '/ip_policy_rules',
  kind: 'IP policy rule',
  name: 'IPPolicyRule',
  plural: 'IPPolicyRules',
  tag: TAG,
  eventResource: 'ip_policy_rule',
  listKey: 'ip_policy_rules',
  item: ipPolicyRule,
  list: ipPolicyRuleList,
  toWire: ipPolicyRuleToWire,
  filters: [
    { param: 'ip_policy_id', column: 'ip_policy_id', description: 'only the rules of this IP policy' },
  ],
});

export function ipPolicyToWire(row: Row<'ip_policies'>, ctx: RequestContext): IpPolicy {
  return describedToWire(row, ctx, IP_POLICIES.path);
}

export function ipPolicyRuleToWire(row: Row<'ip_policy_rules'>, ctx: RequestContext): IpPolicyRule {
  return {
    ...describedToWire(row, ctx, IP_POLICY_RULES.path),
    cidr: row.cidr,
    ip_policy: { id: row.ip_policy_id, uri: ctx.url(`${IP_POLICIES.path}/${row.ip_policy_id}`) },
    action: row.action as IpPolicyRule['action'],
  };
}

export async function ipPolicyRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, IP_POLICIES, {
    summary: 'Create an IP policy',
    body: ipPolicyCreate,
    handler: async ({ body, ctx }) => {
      const row = newDescribedRow(IP_POLICIES.idPrefix, body, ctx);
      await insertRow(ctx.db, IP_POLICIES.table, row);
      return ipPolicyToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, IP_POLICIES, {
    summary: 'Update the description or metadata of an IP policy',
    body: ipPolicyUpdate,
    toChanges: (body) => body,
  });
  defineCollectionReads(app, IP_POLICIES, {
    // Rule 1 of the spec: references elsewhere keep the id and behave as a policy with zero rules,
    // so the policy's rules go with it and nothing that refers to it is touched.
    beforeDelete: async (row, ctx) => {
      await deleteDependents(ctx.db, IP_POLICY_RULES.table, 'ip_policy_id', row.id, 'ip_policy_rule');
    },
  });

  defineCreateRoute(app, IP_POLICY_RULES, {
    summary: 'Create an IP policy rule (allow or deny a CIDR)',
    body: ipPolicyRuleCreate,
    handler: async ({ body, ctx }) => {
      if (!(await findRow(ctx.db, IP_POLICIES.table, body.ip_policy_id))) {
        throw badReference('ip_policy_id', body.ip_policy_id, IP_POLICIES.kind);
      }
      const row = {
        ...newDescribedRow(IP_POLICY_RULES.idPrefix, body, ctx),
        cidr: body.cidr,
        ip_policy_id: body.ip_policy_id,
        action: body.action,
      };
      await insertRow(ctx.db, IP_POLICY_RULES.table, row);
      return ipPolicyRuleToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, IP_POLICY_RULES, {
    summary: 'Update an IP policy rule',
    body: ipPolicyRuleUpdate,
    toChanges: (body) => body,
  });
  defineCollectionReads(app, IP_POLICY_RULES);
}
