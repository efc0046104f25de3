import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { type ModuleKind, storedModule } from '../edges/module-kinds.js';
import { parseStoredModules } from '../edges/stored-modules.js';
import { ApiError } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import { updateRow } from './collection.js';

type ModuleTable = 'tls_edges' | 'https_edges' | 'tcp_edges' | 'https_edge_routes';

/** Whatever owns modules: an edge, or an HTTPS edge's route. */
export interface ModuleOwner<Params extends z.ZodType> {
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
  load(params: z.output<Params>, ctx: RequestContext): Promise<{ id: string; modules: string }>;
}

/**
 * PUT, GET and DELETE `<owner>/<module>` for each module kind: PUT replaces the module completely
 * (references checked), GET shows it (404 when unset), DELETE unsets it (204 even when already unset,
 * so a retried delete succeeds).
 */
export function defineModuleRoutes<Params extends z.ZodType>(
  app: FastifyInstance,
  owner: ModuleOwner<Params>,
  kinds: readonly ModuleKind[],
): void {
  const updated = { resource: owner.eventResource, action: 'updated' as const };
  for (const kind of kinds) {
    const url = `${owner.path}/${kind.name}`;
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
      handler: async ({ params, body, ctx }) => {
        const row = await owner.load(params, ctx);
        await kind.checkReferences?.(body, ctx, '');
        const current = parseStoredModules(row.modules);
        const stored = await storedModule(kind, body, ctx, {
          table: owner.table,
          id: row.id,
          previous: current[kind.name],
        });
        const modules = { ...current, [kind.name]: stored };
        await updateRow(ctx.db, owner.table, row.id, { modules: JSON.stringify(modules) });
        return kind.toWire(stored, ctx);
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
        return kind.toWire(stored, ctx);
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
        const { [kind.name]: _removed, ...rest } = parseStoredModules(row.modules);
        await updateRow(ctx.db, owner.table, row.id, { modules: JSON.stringify(rest) });
        return undefined;
      },
    });
  }
}
