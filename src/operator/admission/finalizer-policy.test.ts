import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { OPERATOR_KINDS } from '../kinds.js';
import {
  admissionFiles,
  FINALIZER_POLICY_PATH,
  finalizerPolicy,
  finalizerPolicyBinding,
} from './finalizer-policy.js';

const repoFile = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

interface Policy {
  spec: { matchConstraints: { resourceRules: { resources: string[]; operations: string[] }[] } };
}

describe('the finalizer admission policy', () => {
  it.each([...admissionFiles(OPERATOR_KINDS)])(
    '%s is what the kinds generate (run `npm run crds`)',
    (path, text) => {
      expect(repoFile(path)).toBe(text);
    },
  );

  it('matches creates of every kind whose controller finalizes, and never a Tunnel', () => {
    const [rule] = (finalizerPolicy(OPERATOR_KINDS) as Policy).spec.matchConstraints.resourceRules;
    expect(rule?.operations).toEqual(['CREATE']);
    expect(rule?.resources).not.toContain('tunnels');
    expect(rule?.resources).toEqual(
      OPERATOR_KINDS.filter((kind) => kind.definition.plural !== 'tunnels')
        .map((kind) => kind.definition.plural)
        .sort(),
    );
  });

  it('binds everywhere by default, or to the namespaces named', () => {
    expect(finalizerPolicyBinding()).not.toHaveProperty('spec.matchResources');
    expect(finalizerPolicyBinding('p', ['a', 'b'])).toMatchObject({
      spec: {
        policyName: 'p',
        matchResources: {
          namespaceSelector: {
            matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['a', 'b'] }],
          },
        },
      },
    });
    const documents = parseAllDocuments(repoFile(FINALIZER_POLICY_PATH)).map(
      (d) => d.toJS() as { kind: string },
    );
    expect(documents.map((d) => d.kind)).toEqual([
      'MutatingAdmissionPolicy',
      'MutatingAdmissionPolicyBinding',
    ]);
  });
});
