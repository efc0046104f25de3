import { badRequest } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { type ModuleKind, storedModule } from './module-kinds.js';

/** The `modules` column: module name -> validated write form. */
export type StoredModules = Record<string, unknown>;

export function parseStoredModules(json: string): StoredModules {
  return JSON.parse(json) as StoredModules;
}

/** Every module of `kinds` in read form, null when unset. */
export function modulesToWire(
  stored: StoredModules,
  kinds: readonly ModuleKind[],
  ctx: RequestContext,
): Record<string, unknown> {
  return Object.fromEntries(
    kinds.map((kind) => {
      const value = stored[kind.name];
      return [kind.name, value === undefined || value === null ? null : kind.toWire(value, ctx)];
    }),
  );
}

/**
 * The module fields of an edge or route create/update body, references checked. On create a null
 * module is simply unset. On update the spec's semantics hold: an absent module is unchanged, a
 * present one replaces the old completely, and a module cannot be removed through the update.
 * `owner` (the row and its current modules) is needed by kinds that seal secrets or generate keys.
 */
export async function modulesFromBody(
  body: Record<string, unknown>,
  kinds: readonly ModuleKind[],
  ctx: RequestContext,
  mode: 'create' | 'update',
  modulePathHint: string,
  owner?: { table: string; id: string; modules: StoredModules },
): Promise<StoredModules> {
  const out: StoredModules = {};
  for (const kind of kinds) {
    const value = body[kind.name];
    if (value === undefined) continue;
    if (value === null) {
      if (mode === 'update') {
        throw badRequest(
          `${kind.name}: a module cannot be removed through an update; use DELETE ${modulePathHint}/${kind.name}`,
        );
      }
      continue;
    }
    await kind.checkReferences?.(value, ctx, kind.name);
    if (kind.toStored && !owner) throw new Error(`modulesFromBody: module ${kind.name} needs its owner row`);
    out[kind.name] = owner
      ? await storedModule(kind, value, ctx, { ...owner, previous: owner.modules[kind.name] })
      : value;
  }
  return out;
}
