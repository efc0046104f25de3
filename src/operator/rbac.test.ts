import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OPERATOR_CONTROLLERS, OPERATOR_KINDS } from './kinds.js';
import { operatorRules, rbacFiles } from './rbac.js';

const repoFile = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('operator RBAC generated from the kinds registry', () => {
  it.each([...rbacFiles(OPERATOR_KINDS, OPERATOR_CONTROLLERS)])(
    '%s is what the registry generates (run `npm run crds`)',
    (path, text) => {
      expect(repoFile(path)).toBe(text);
    },
  );

  it('gives every registered kind its informer, status and (when it owns Secrets) finalizer rights', () => {
    const rules = operatorRules(OPERATOR_KINDS, OPERATOR_CONTROLLERS);
    const resources = rules.flatMap((rule) => rule.resources);
    for (const { definition, ownsSecrets } of OPERATOR_KINDS) {
      expect(resources, definition.kind).toContain(definition.plural);
      expect(resources, definition.kind).toContain(`${definition.plural}/status`);
      expect(resources.includes(`${definition.plural}/finalizers`), definition.kind).toBe(
        ownsSecrets === true,
      );
    }
    const role = parse(repoFile('config/rbac/role.yaml')) as { kind: string; rules: unknown[] };
    expect(role.kind).toBe('ClusterRole');
    expect(role.rules).toEqual(rules.map(({ why: _why, ...rule }) => rule));
  });

  it('lists each kind once', () => {
    const kinds = OPERATOR_KINDS.map((kind) => kind.definition.kind);
    expect(new Set(kinds).size).toBe(kinds.length);
    expect(kinds).toHaveLength(18);
  });
});
