import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { type ModuleKind, storedModule, type WireScope } from '../edge-resources/module-kinds.js';
import {
  parseStoredModules,
  readStoredModules,
  type StoredModules,
} from '../edge-resources/stored-modules.js';
import type { ModuleChangeSource } from '../edge-resources/tls-passthrough.js';
import { ApiError } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import { updateRow } from '../store/rows.js';

type ModuleTable = 'tls_edges' | 'https_edges' | 'tcp_edges' | 'https_edge_routes';

/** The owner row of a module request, and where its modules are shown from. */
export interface LoadedOwner {
  id: string;
  modules: string;
  scope: WireScope;
}

/** Whatever owns modules: an edge, or an HTTPS edge's route. `:id` of the path is the owner's id. */
export interface ModuleOwner<Params extends z.ZodType<{ id: string }>> {
  table: ModuleTable;
  /** Fastify path of the owner, e.g. `/edges/tls/:id` or `/edges/https/:edge_id/routes/:id`. */
  path: string;
  params: Params;
  /** Human name for messages, e.g. `TLS edge`. */
  kind: string;
  /** Operation id stem, e.g. `TLSEdge` -> replaceTLSEdgeBackendModule. */
  operationStem: string;
  /** The owner's `<resource>_updated.v0` event. */
  eventResource: string;
  tag: string;
  /** The owner row (404 when unknown). */
  load(params: z.output<Params>, ctx: RequestContext): Promise<LoadedOwner>;
  /** The owner's read form as it now stands: the payload of its `_updated` event. */
  readForm(params: z.output<Params>, ctx: RequestContext): Promise<unknown>;
  /** Refuses module combinations the owner cannot have (400), given its modules after the change. */
  checkModules?(modules: StoredModules, changed: readonly string[], source: ModuleChangeSource): void;
}

/**
 * PUT, GET and DELETE `<owner>/<module>` for each module kind: PUT replaces the module completely
 * (references checked), GET shows it (404 when unset), DELETE unsets it (204 even when already unset,
 * so a retried delete succeeds, recording no event then). Changes record the owner's `_updated`
 * event with the owner in read form.
 */
export function defineModuleRoutes<Params extends z.ZodType<{ id: string }>>(
  app: FastifyInstance,
  owner: ModuleOwner<Params>,
  kinds: readonly ModuleKind[],
): void {
  const updated = {
    resource: owner.eventResource,
    action: 'updated' as const,
    object: ({ params, ctx }: { params: unknown; ctx: RequestContext }) =>
      owner.readForm(params as z.output<Params>, ctx),
  };
  for (const kind of kinds) {
    const url = `${owner.path}/${kind.name}`;
    const prepare = kind.prepare;
    defineRoute(app, {
      method: 'PUT',
      url,
      operationId: `replace${owner.operationStem}${kind.operationName}Module`,
      summary: `Replace the ${kind.name} module of a ${owner.kind}`,
      tag: owner.tag,
      params: owner.params,
      body: kind.input,
      status: 200,
      response: kind.output,
      event: updated,
      // Slow work (key generation) before the transaction, from the module as it is now.
      prepare: prepare
        ? async ({ params, body }): Promise<unknown> => {
            const current = await readStoredModules(app.edgeward.db, owner.table, params.id);
            return prepare(body, { id: params.id, previous: current[kind.name] });
          }
        : undefined,
      handler: async ({ params, body, ctx, prepared }) => {
        const row = await owner.load(params, ctx);
        const current = parseStoredModules(row.modules);
        const previous = current[kind.name] ?? undefined;
        kind.validate?.(body, '', owner.table);
        await kind.checkReferences?.(body, ctx, '', previous);
        const stored = await storedModule(kind, body, ctx, {
          table: owner.table,
          id: row.id,
          previous,
          prepared,
        });
        const modules = { ...current, [kind.name]: stored };
        owner.checkModules?.(modules, [kind.name], 'module');
        await updateRow(ctx.db, owner.table, row.id, { modules: JSON.stringify(modules) });
        return kind.toWire(stored, ctx, row.scope);
      },
    });
    defineRoute(app, {
      method: 'GET',
      url,
      operationId: `get${owner.operationStem}${kind.operationName}Module`,
      summary: `Get the ${kind.name} module of a ${owner.kind}`,
      tag: owner.tag,
      params: owner.params,
      status: 200,
      response: kind.output,
      handler: async ({ params, ctx }) => {
        const row = await owner.load(params, ctx);
        const stored = parseStoredModules(row.modules)[kind.name];
        if (stored === undefined || stored === null) {
          throw new ApiError('ERR_EDGEWARD_400', `${owner.kind} ${row.id} has no ${kind.name} module`);
        }
        return kind.toWire(stored, ctx, row.scope);
      },
    });
    defineRoute(app, {
      method: 'DELETE',
      url,
      operationId: `delete${owner.operationStem}${kind.operationName}Module`,
      summary: `Remove the ${kind.name} module of a ${owner.kind}`,
      tag: owner.tag,
      params: owner.params,
      status: 204,
      event: updated,
      handler: async ({ params, ctx }) => {
        const row = await owner.load(params, ctx);
        const { [kind.name]: removed, ...rest } = parseStoredModules(row.modules);
        if (removed === undefined || removed === null) {
          // Nothing changed: a retried delete still succeeds, but reports no change.
          ctx.markUnchanged();
          return undefined;
        }
        await updateRow(ctx.db, owner.table, row.id, { modules: JSON.stringify(rest) });
        return undefined;
      },
    });
  }
}
