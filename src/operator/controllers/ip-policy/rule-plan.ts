import { sameJson } from '../../runtime/same-json.js';

export type RuleAction = 'allow' | 'deny';

export interface DesiredRule {
  cidr: string;
  action: RuleAction;
  description: string;
}

export interface ExistingRule extends DesiredRule {
  id: string;
}

export type RuleStep =
  | { op: 'create'; rule: DesiredRule }
  | { op: 'update'; id: string; rule: DesiredRule; changes: Partial<DesiredRule> }
  | { op: 'delete'; id: string; rule: ExistingRule };

/**
 * The writes that turn `existing` into `desired` (rules matched by cidr), ordered so that access
 * is never briefly wider than both the old and the new policy allow: first every deny the new
 * policy has is in place (created or switched to deny), then the allows, then rules that go away
 * are removed, allows before denies. An unchanged rule makes no step; extra server rules with the
 * same cidr (made outside the operator) are removed.
 */
export function planRules(desired: readonly DesiredRule[], existing: readonly ExistingRule[]): RuleStep[] {
  const byCidr = new Map<string, ExistingRule>();
  const extras: ExistingRule[] = [];
  for (const rule of existing) {
    if (byCidr.has(rule.cidr)) extras.push(rule);
    else byCidr.set(rule.cidr, rule);
  }
  const upserts: RuleStep[] = [];
  const wanted = new Set<string>();
  for (const rule of desired) {
    wanted.add(rule.cidr);
    const current = byCidr.get(rule.cidr);
    if (!current) {
      upserts.push({ op: 'create', rule });
      continue;
    }
    const changes: Partial<DesiredRule> = {};
    if (current.action !== rule.action) changes.action = rule.action;
    if (!sameJson(current.description, rule.description)) changes.description = rule.description;
    if (Object.keys(changes).length > 0) upserts.push({ op: 'update', id: current.id, rule, changes });
  }
  const removals: RuleStep[] = [...byCidr.values()]
    .filter((rule) => !wanted.has(rule.cidr))
    .concat(extras)
    .map((rule) => ({ op: 'delete', id: rule.id, rule }));
  const actionOf = (step: RuleStep) => step.rule.action;
  return [
    ...upserts.filter((step) => actionOf(step) === 'deny'),
    ...upserts.filter((step) => actionOf(step) === 'allow'),
    ...removals.filter((step) => actionOf(step) === 'allow'),
    ...removals.filter((step) => actionOf(step) === 'deny'),
  ];
}
