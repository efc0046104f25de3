import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layering of ARCHITECTURE.md, checked: imports only point down. Each rule names a folder of
 * src/ and the folders its (non-test) files may import from; the first rule whose folder contains a
 * file applies to it.
 */
const SRC = dirname(fileURLToPath(import.meta.url));

const RULES: { folder: string; mayImport: string[] }[] = [
  { folder: 'schemas', mayImport: ['schemas'] },
  // Shared rooms, below every program: small helpers that know no edgeward concept, and the
  // crypto (ids, tokens, X.509, OpenSSH, sealed secrets) that knows nothing of HTTP.
  { folder: 'lib', mayImport: ['lib'] },
  { folder: 'crypto', mayImport: ['crypto', 'lib', 'schemas'] },
  // Traffic policy: compiled by the API to check policies when written, run by the edge.
  { folder: 'traffic-policy', mayImport: ['traffic-policy', 'schemas'] },
  { folder: 'client', mayImport: ['client', 'schemas'] },
  // The data plane: the edge and the agent share only the wire contracts of schemas/ (and lib/'s
  // small helpers).
  { folder: 'edge', mayImport: ['edge', 'schemas', 'traffic-policy', 'crypto', 'lib'] },
  { folder: 'agent', mayImport: ['agent', 'schemas', 'lib'] },
  { folder: 'dev-cluster', mayImport: ['dev-cluster', 'crypto', 'lib'] },
  // Inside the server: store → events → auth, idempotency → http → edge resources and routes →
  // plugins and app.
  { folder: 'server/store', mayImport: ['server/store', 'server/errors', 'crypto', 'lib', 'schemas'] },
  { folder: 'server/errors', mayImport: ['server/errors', 'schemas'] },
  {
    folder: 'server/events',
    mayImport: ['server/events', 'server/store', 'server/errors', 'crypto', 'lib', 'schemas'],
  },
  // Authentication and authorization, idempotent replays: concerns of their own, below the routes.
  {
    folder: 'server/auth',
    mayImport: ['server/auth', 'server/events', 'server/store', 'server/errors', 'crypto', 'lib', 'schemas'],
  },
  {
    folder: 'server/idempotency',
    mayImport: ['server/idempotency', 'server/store', 'server/errors', 'crypto', 'lib', 'schemas'],
  },
  {
    folder: 'server/http',
    mayImport: [
      'server/http',
      'server/auth',
      'server/idempotency',
      'server/events',
      'server/store',
      'server/errors',
      'crypto',
      'lib',
      'schemas',
    ],
  },
  { folder: 'server', mayImport: ['server', 'schemas', 'traffic-policy', 'crypto', 'lib'] },
  // Inside the operator: runtime knows nothing of edgeward's kinds (it instruments the client's
  // transport and shares its retry policy); CRDs know no controller.
  { folder: 'operator/runtime', mayImport: ['operator/runtime', 'client', 'lib'] },
  { folder: 'operator/crds', mayImport: ['operator/crds', 'schemas'] },
  { folder: 'operator', mayImport: ['operator', 'agent', 'client', 'lib', 'schemas'] },
  // The Docker-less image build reads only the Dockerfile.
  { folder: 'image', mayImport: ['image', 'lib'] },
  {
    folder: 'cli',
    mayImport: [
      'cli',
      'server',
      'edge',
      'agent',
      'operator',
      'client',
      'dev-cluster',
      'crypto',
      'lib',
      'schemas',
    ],
  },
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const inFolder = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);

function ruleFor(path: string) {
  return RULES.find((rule) => inFolder(path, rule.folder));
}

/** `[importing file, imported file]` for every relative import of src/, paths relative to src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((match) =>
    relative(SRC, resolve(dirname(file), match[1] as string)).replace(/\.js$/, ''),
  );
}

describe('layering: imports only point down', () => {
  const files = sourceFiles(SRC).map((file) => ({ file, path: relative(SRC, file) }));

  it('every source file falls under a rule', () => {
    const unruled = files.filter(({ path }) => path.includes('/') && !ruleFor(path));
    expect(unruled.map(({ path }) => path)).toEqual([]);
  });

  it('no file imports from a layer above its own', () => {
    const violations: string[] = [];
    for (const { file, path } of files) {
      const rule = ruleFor(path);
      if (!rule) continue;
      for (const target of importsOf(file)) {
        if (!target.startsWith('..') && !rule.mayImport.some((folder) => inFolder(target, folder))) {
          violations.push(`${path} imports ${target}`);
        }
      }
    }
    expect(violations).toEqual([]);
  });
});
