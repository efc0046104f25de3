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
import { defineRoute } from '../http/route.js';
import {
  defineCollectionReads,
  defineUpdateRoute,
  deleteDependents,
  describedToWire,
  findRow,
  insertRow,
  newDescribedRow,
  type Row,
} from './collection.js';

const TAG = 'IP policies';

export function ipPolicyToWire(row: Row<'ip_policies'>, ctx: RequestContext): IpPolicy {
  return describedToWire(row, ctx, '/ip_policies');
}

export function ipPolicyRuleToWire(row: Row<'ip_policy_rules'>, ctx: RequestContext): IpPolicyRule {
  return {
    ...describedToWire(row, ctx, '/ip_policy_rules'),
    cidr: row.cidr,
    ip_policy: { id: row.ip_policy_id, uri: ctx.url(`/ip_policies/${row.ip_policy_id}`) },
    action: row.action as IpPolicyRule['action'],
  };
}

export async function ipPolicyRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: '/ip_policies',
    operationId: 'createIPPolicy',
    summary: 'Create an IP policy',
    tag: TAG,
    body: ipPolicyCreate,
    status: 201,
    response: ipPolicy,
    idempotent: true,
    event: { resource: 'ip_policy', action: 'created' },
    handler: async ({ body, ctx }) => {
      const row = newDescribedRow('ipp', body, ctx);
      await insertRow(ctx.db, 'ip_policies', row);
      return ipPolicyToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'ip_policies',
    eventResource: 'ip_policy',
    path: '/ip_policies',
    kind: 'IP policy',
    name: 'IPPolicy',
    tag: TAG,
    summary: 'Update the description or metadata of an IP policy',
    body: ipPolicyUpdate,
    item: ipPolicy,
    toChanges: (body) => body,
    toWire: ipPolicyToWire,
  });
  defineCollectionReads(app, {
    table: 'ip_policies',
    eventResource: 'ip_policy',
    path: '/ip_policies',
    listKey: 'ip_policies',
    kind: 'IP policy',
    name: 'IPPolicy',
    plural: 'IPPolicies',
    tag: TAG,
    item: ipPolicy,
    list: ipPolicyList,
    toWire: ipPolicyToWire,
    // Rule 1 of the spec: references elsewhere keep the id and behave as a policy with zero rules,
    // so the policy's rules go with it and nothing that refers to it is touched.
    beforeDelete: async (row, ctx) => {
      await deleteDependents(ctx.db, 'ip_policy_rules', 'ip_policy_id', row.id, 'ip_policy_rule');
    },
  });

  defineRoute(app, {
    method: 'POST',
    url: '/ip_policy_rules',
    operationId: 'createIPPolicyRule',
    summary: 'Create an IP policy rule (allow or deny a CIDR)',
    tag: TAG,
    body: ipPolicyRuleCreate,
    status: 201,
    response: ipPolicyRule,
    idempotent: true,
    event: { resource: 'ip_policy_rule', action: 'created' },
    handler: async ({ body, ctx }) => {
      if (!(await findRow(ctx.db, 'ip_policies', body.ip_policy_id))) {
        throw badReference('ip_policy_id', body.ip_policy_id, 'IP policy');
      }
      const row = {
        ...newDescribedRow('ipr', body, ctx),
        cidr: body.cidr,
        ip_policy_id: body.ip_policy_id,
        action: body.action,
      };
      await insertRow(ctx.db, 'ip_policy_rules', row);
      return ipPolicyRuleToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'ip_policy_rules',
    eventResource: 'ip_policy_rule',
    path: '/ip_policy_rules',
    kind: 'IP policy rule',
    name: 'IPPolicyRule',
    tag: TAG,
    summary: 'Update an IP policy rule',
    body: ipPolicyRuleUpdate,
    item: ipPolicyRule,
    toChanges: (body) => body,
    toWire: ipPolicyRuleToWire,
  });
  defineCollectionReads(app, {
    table: 'ip_policy_rules',
    eventResource: 'ip_policy_rule',
    path: '/ip_policy_rules',
    listKey: 'ip_policy_rules',
    kind: 'IP policy rule',
    name: 'IPPolicyRule',
    plural: 'IPPolicyRules',
    tag: TAG,
    item: ipPolicyRule,
    list: ipPolicyRuleList,
    toWire: ipPolicyRuleToWire,
    filters: [
      { param: 'ip_policy_id', column: 'ip_policy_id', description: 'only the rules of this IP policy' },
    ],
  });
}
