import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KIND_DEFINITIONS } from '../kinds.js';
import { ARGOCD_PATCH_PATH, argocdFiles, healthScript } from './health-customizations.js';

const repoFile = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const OPERATOR_SOURCES = fileURLToPath(new URL('../', import.meta.url));

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('the Argo CD health checks', () => {
  it.each([...argocdFiles(KIND_DEFINITIONS)])(
    '%s is what the kinds generate (run `npm run crds`)',
    (path, text) => {
      expect(repoFile(path)).toBe(text);
    },
  );

  it('give every kind of the group the health script', () => {
    const patch = parse(repoFile(ARGOCD_PATCH_PATH)) as { data: Record<string, string> };
    expect(Object.keys(patch.data).sort()).toEqual(
      KIND_DEFINITIONS.map(({ kind }) => `resource.customizations.health.edgeward.dev_${kind}`).sort(),
    );
    for (const script of Object.values(patch.data)) expect(script).toBe(healthScript());
  });

  it('read as Degraded exactly the reasons the operator gives up on until the spec changes', () => {
    const table = /local terminal = \{([^}]*)\}/.exec(healthScript())?.[1] ?? '';
    const degraded = [...table.matchAll(/(\w+) = true/g)].map((match) => match[1]);
    // Every reason a sync throws as terminal, and the two reported while refusing to go on.
    const thrown = new Set<string>(['SecretConflict']);
    for (const file of sourcesUnder(OPERATOR_SOURCES)) {
      for (const match of readFileSync(file, 'utf8').matchAll(/new TerminalSyncError\(\s*'(\w+)'/g)) {
        thrown.add(match[1] as string);
      }
    }
    thrown.add('InvalidSpec');
    expect(degraded.sort()).toEqual([...thrown].sort());
    expect(degraded).toContain('TokenUnavailable');
    expect(degraded).toContain('AdoptTargetNotFound');
  });
});
