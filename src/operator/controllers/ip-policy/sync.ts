import type { EdgewardClient } from '../../../client/index.js';
import type { IpPolicy, IpPolicyRule } from '../../../schemas/ip-policies.js';
import type { IpPolicySpec, IpPolicyStatus } from '../../crds/definitions/ip-policy.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { SyncProgressError } from '../managed/sync-errors.js';
import { changedFields } from '../shared/changed-fields.js';
import { describedFields } from '../shared/described-fields.js';
import { isEdgewardNotFound } from '../shared/edgeward-errors.js';
import { type DesiredRule, type ExistingRule, planRules } from './rule-plan.js';

export type IpPolicyObject = ManagedObject & { spec: IpPolicySpec; status?: IpPolicyStatus };

/** The policy with its rules, as the server holds them. */
export type RemoteIpPolicy = IpPolicy & { rules: IpPolicyRule[] };

function desiredFields(object: IpPolicyObject) {
  return describedFields(object.spec);
}

function desiredRules(object: IpPolicyObject): DesiredRule[] {
  return (object.spec.rules ?? []).map((rule) => ({
    cidr: rule.cidr,
    action: rule.action,
    description: rule.description ?? '',
  }));
}

/**
 * IPPolicy -> `/ip_policies` plus its inline `rules` as `/ip_policy_rules`, matched by cidr. The
 * API takes no rules in a policy's create (its body is description and metadata only), so a new
 * policy costs one create per rule besides its own; they go under keys derived from the
 * policy's, so a replayed policy create replays its rules too and a create reads no list. Later
 * reconciles list the rules (`?ip_policy_id=`), so rules made or deleted outside the operator,
 * and rules of an interrupted reconcile, are found and repaired.
 */
export function ipPolicySync(api: EdgewardClient): ResourceSync<IpPolicyObject, undefined, RemoteIpPolicy> {
  async function rulesOf(policyId: string): Promise<IpPolicyRule[]> {
    const rules: IpPolicyRule[] = [];
    for await (const rule of api.ipPolicyRules.iterateOfPolicy(policyId)) rules.push(rule);
    return rules;
  }

  /** Applies the plan in its safe order; returns whether anything was written. */
  async function reconcileRules(object: IpPolicyObject, policyId: string, existing: IpPolicyRule[]) {
    const steps = planRules(desiredRules(object), existing as ExistingRule[]);
    for (const step of steps) {
      if (step.op === 'create') {
        await api.ipPolicyRules.create({ ...step.rule, ip_policy_id: policyId });
      } else if (step.op === 'update') {
        await api.ipPolicyRules.update(step.id, step.changes);
      } else {
        try {
          await api.ipPolicyRules.delete(step.id);
        } catch (error) {
          if (!isEdgewardNotFound(error)) throw error;
        }
      }
    }
    return steps.length > 0;
  }

  return {
    resolve: async () => ({ ready: true, value: undefined }),
    async get(id) {
      const policy = await api.ipPolicies.get(id);
      return { ...policy, rules: await rulesOf(id) };
    },
    async create(object, _resolved, options) {
      const policy = await api.ipPolicies.create(desiredFields(object), options);
      // Each rule's key is the policy's and its cidr (unique in a policy): a retry replays it. A
      // failure is recorded with the policy's id, so the next reconcile lists the rules and repairs
      // them (a rule made under its key with another action, its answer lost, is updated).
      // Denies first, as always.
      const rules: IpPolicyRule[] = [];
      try {
        for (const step of planRules(desiredRules(object), [])) {
          if (step.op !== 'create') continue;
          const idempotencyKey = `${options.idempotencyKey}-rule-${step.rule.cidr}`;
          rules.push(
            await api.ipPolicyRules.create({ ...step.rule, ip_policy_id: policy.id }, { idempotencyKey }),
          );
        }
      } catch (error) {
        throw new SyncProgressError({ id: policy.id, uri: policy.uri }, error);
      }
      return { ...policy, rules };
    },
    async update(object, _resolved, remote) {
      let policy: IpPolicy = remote;
      let changed = false;
      const patch = changedFields(desiredFields(object), remote);
      if (Object.keys(patch).length > 0) {
        policy = await api.ipPolicies.update(remote.id, patch);
        changed = true;
      }
      if (await reconcileRules(object, remote.id, remote.rules)) {
        changed = true;
        return { remote: { ...policy, rules: await rulesOf(remote.id) }, changed };
      }
      return { remote: { ...policy, rules: remote.rules }, changed };
    },
    delete: (id) => api.ipPolicies.delete(id),
    statusFields: (object, remote) => {
      // In spec order, so the status reads like the spec.
      const order = new Map(desiredRules(object).map((rule, index) => [rule.cidr, index]));
      const rules = [...remote.rules]
        .sort((a, b) => (order.get(a.cidr) ?? Infinity) - (order.get(b.cidr) ?? Infinity))
        .map((rule) => ({ id: rule.id, cidr: rule.cidr, action: rule.action }));
      return { rules };
    },
  };
}
