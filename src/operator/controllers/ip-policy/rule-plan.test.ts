import { describe, expect, it } from 'vitest';
import { type ExistingRule, planRules } from './rule-plan.js';

const rule = (cidr: string, action: 'allow' | 'deny', id?: string, description = '') =>
  id ? ({ id, cidr, action, description } as ExistingRule) : { cidr, action, description };

describe('planRules', () => {
  it('makes no step when the server matches', () => {
    const existing = [
      rule('10.0.0.0/8', 'allow', 'ipr_1'),
      rule('10.1.0.0/16', 'deny', 'ipr_2'),
    ] as ExistingRule[];
    expect(planRules([rule('10.0.0.0/8', 'allow'), rule('10.1.0.0/16', 'deny')], existing)).toEqual([]);
  });

  it('puts denies in place before allows, and removes allows before denies, last', () => {
    const existing = [
      rule('192.0.2.0/24', 'allow', 'ipr_old_allow'),
      rule('198.51.100.0/24', 'deny', 'ipr_old_deny'),
      rule('203.0.113.0/24', 'allow', 'ipr_flip'),
    ] as ExistingRule[];
    const steps = planRules(
      [rule('10.0.0.0/8', 'allow'), rule('203.0.113.0/24', 'deny'), rule('172.16.0.0/12', 'deny')],
      existing,
    );
    expect(steps.map((step) => `${step.op} ${step.rule.cidr} ${step.rule.action}`)).toEqual([
      'update 203.0.113.0/24 deny',
      'create 172.16.0.0/12 deny',
      'create 10.0.0.0/8 allow',
      'delete 192.0.2.0/24 allow',
      'delete 198.51.100.0/24 deny',
    ]);
    expect(steps[0]).toMatchObject({ id: 'ipr_flip', changes: { action: 'deny' } });
  });

  it('updates only what differs and removes duplicate cidrs made outside the operator', () => {
    const existing = [
      rule('10.0.0.0/8', 'allow', 'ipr_a', 'old'),
      rule('10.0.0.0/8', 'allow', 'ipr_dup'),
    ] as ExistingRule[];
    const steps = planRules([rule('10.0.0.0/8', 'allow', undefined, 'new')], existing);
    expect(steps).toEqual([
      {
        op: 'update',
        id: 'ipr_a',
        rule: rule('10.0.0.0/8', 'allow', undefined, 'new'),
        changes: { description: 'new' },
      },
      { op: 'delete', id: 'ipr_dup', rule: existing[1] },
    ]);
  });
});
