import { describe, expect, it } from 'vitest';
import { ACL_MAX_RULES, ACL_RULE_MAX_BYTES, acl, aclRuleProblem } from './acl.js';

describe('ACL rules', () => {
  it.each([
    '*',
    'bind:example.com',
    'bind:app.example.com',
    'bind:*.example.com',
    'bind:localhost',
    'bind:xn--bcher-kva.example',
    'bind:a-b.example.com',
    'bind:1.tcp.edgeward.dev:12345',
    'bind:203.0.113.7:443',
    'bind:[2001:db8::1]:8080',
    'bind:example.com:1',
    'bind:example.com:65535',
    'bind:team=prod',
    'bind:*=prod',
    'bind:team=*',
    'bind:*=*',
    'bind:app.kubernetes.io_name=web-1',
  ])('accepts %s', (rule) => {
    expect(aclRuleProblem(rule)).toBeUndefined();
  });

  it.each([
    ['connect:x', /only 'bind:<domain\|address\|label>' rules and '\*' are allowed/],
    ['bind', /only 'bind:/],
    ['BIND:example.com', /only 'bind:/],
    ['', /only 'bind:/],
    ['**', /only 'bind:/],
    [' bind:example.com', /only 'bind:/],
    ['bind:', /the bind target is empty/],
    ['bind:*', /bind target must be/],
    ['bind:foo*.example.com', /bind target must be/],
    ['bind:app.*.example.com', /bind target must be/],
    ['bind:example.*', /bind target must be/],
    ['bind:*.*.example.com', /bind target must be/],
    ['bind:*example.com', /bind target must be/],
    ['bind:example.com.', /bind target must be/],
    ['bind:-bad.example.com', /bind target must be/],
    ['bind:under_score.example.com', /bind target must be/],
    ['bind:exa mple.com', /bind target must be/],
    [`bind:${'a'.repeat(64)}.com`, /bind target must be/],
    ['bind:example.com:0', /bind target must be/],
    ['bind:example.com:65536', /bind target must be/],
    ['bind:example.com:080', /bind target must be/],
    ['bind:example.com:', /bind target must be/],
    ['bind::443', /bind target must be/],
    ['bind:*.example.com:443', /bind target must be/],
    ['bind:2001:db8::1:80', /bind target must be/],
    ['bind:[203.0.113.7]:80', /bind target must be/],
    ['bind:=prod', /bind target must be/],
    ['bind:team=', /bind target must be/],
    ['bind:te am=prod', /bind target must be/],
    ['bind:team=pr*d', /bind target must be/],
    ['bind:team=prod=x', /bind target must be/],
  ])('rejects %j', (rule, message) => {
    const problem = aclRuleProblem(rule);
    expect(problem).toMatch(message);
    if (rule !== '') expect(problem).toContain(`'${rule}' is not a valid rule`);
  });

  it(`limits a rule to ${ACL_RULE_MAX_BYTES} bytes`, () => {
    const fits = `bind:${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}`;
    expect(Buffer.byteLength(fits)).toBeLessThanOrEqual(ACL_RULE_MAX_BYTES);
    expect(aclRuleProblem(fits)).toBeUndefined();
    const label = `bind:k=${'v'.repeat(ACL_RULE_MAX_BYTES - 'bind:k='.length)}`;
    expect(aclRuleProblem(label)).toBeUndefined();
    expect(aclRuleProblem(`${label}v`)).toBe(`must be at most ${ACL_RULE_MAX_BYTES} bytes`);
  });

  it('the schema names the index of the bad rule and caps the rule count', () => {
    const result = acl.safeParse(['*', 'connect:x']);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual([1]);
    expect(acl.safeParse([]).success).toBe(true);
    expect(acl.safeParse(Array(ACL_MAX_RULES).fill('*')).success).toBe(true);
    const tooMany = acl.safeParse(Array(ACL_MAX_RULES + 1).fill('*'));
    expect(tooMany.error?.issues[0]?.message).toBe(`must have at most ${ACL_MAX_RULES} rules`);
    expect(acl.safeParse('*').success).toBe(false);
    expect(acl.safeParse([1]).success).toBe(false);
  });
});
