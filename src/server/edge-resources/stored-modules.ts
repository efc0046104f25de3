import { badRequest } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import type { Db } from '../store/database.js';
import { type ModuleKind, storedModule, type WireScope } from './module-kinds.js';

/** The `modules` column: module name -> validated write form. */
export type StoredModules = Record<string, unknown>;

/** What each module kind's `prepare` step produced, by module name (present when it ran). */
export type PreparedModules = Record<string, unknown>;

type ModuleTable = 'tls_edges' | 'https_edges' | 'tcp_edges' | 'https_edge_routes';

export function parseStoredModules(json: string): StoredModules {
  return JSON.parse(json) as StoredModules;
}

/** The modules of one owner row as they are now; none when the row does not exist (yet). */
export async function readStoredModules(db: Db, table: ModuleTable, id: string): Promise<StoredModules> {
  const row = await db.selectFrom(table).select('modules').where('id', '=', id).executeTakeFirst();
  return row ? parseStoredModules(row.modules) : {};
}

/** Every module of `kinds` in read form, null when unset. */
export function modulesToWire(
  stored: StoredModules,
  kinds: readonly ModuleKind[],
  ctx: RequestContext,
  scope: WireScope = {},
): Record<string, unknown> {
  return Object.fromEntries(
    kinds.map((kind) => {
      const value = stored[kind.name];
      return [kind.name, value === undefined || value === null ? null : kind.toWire(value, ctx, scope)];
    }),
  );
}

/**
 * The `prepare` step of every module of `body` whose kind has one, run before the write transaction
 * (a route's SAML key pair). `current` reads the owner's modules, only when some kind needs them.
 */
export async function prepareModules(
  body: Record<string, unknown>,
  kinds: readonly ModuleKind[],
  ownerId: string,
  current: () => Promise<StoredModules>,
): Promise<PreparedModules> {
  const prepared: PreparedModules = {};
  let modules: StoredModules | undefined;
  for (const kind of kinds) {
    const value = body[kind.name];
    if (!kind.prepare || value === undefined || value === null) continue;
    modules ??= await current();
    prepared[kind.name] = await kind.prepare(value, { id: ownerId, previous: modules[kind.name] });
  }
  return prepared;
}

/**
 * The module fields of an edge or route create/update body, references checked. On create a null
 * module is simply unset. On update the spec's semantics hold: an absent module is unchanged, a
 * present one replaces the old completely, and a module cannot be removed through the update.
 * `owner` is the row and its current modules (none on create); `prepared` what `prepareModules`
 * produced for this body before the transaction.
 */
export async function modulesFromBody(
  body: Record<string, unknown>,
  kinds: readonly ModuleKind[],
  ctx: RequestContext,
  mode: 'create' | 'update',
  modulePathHint: string,
  owner: { table: string; id: string; modules: StoredModules },
  prepared: PreparedModules = {},
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
    const previous = owner.modules[kind.name] ?? undefined;
    kind.validate?.(value, kind.name, owner.table);
    await kind.checkReferences?.(value, ctx, kind.name, previous);
    if (kind.prepare && !(kind.name in prepared)) {
      throw new Error(`modulesFromBody: module ${kind.name} was not prepared before the transaction`);
    }
    out[kind.name] = await storedModule(kind, value, ctx, {
      table: owner.table,
      id: owner.id,
      previous,
      prepared: prepared[kind.name],
    });
  }
  return out;
}
