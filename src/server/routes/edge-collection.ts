import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { idParams } from '../../schemas/common.js';
import { claimHostports, releaseHostports } from '../edge-resources/hostports.js';
import type { ModuleKind } from '../edge-resources/module-kinds.js';
import {
  modulesFromBody,
  modulesToWire,
  parseStoredModules,
  type StoredModules,
} from '../edge-resources/stored-modules.js';
import type { ModuleChangeSource } from '../edge-resources/tls-passthrough.js';
import type { RequestContext } from '../http/context.js';
import { insertRow, type Row, requireRow } from '../store/rows.js';
import { type Collection, defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';
import { defineModuleRoutes } from './edge-module-routes.js';

type EdgeTable = 'tls_edges' | 'https_edges' | 'tcp_edges';
type EdgeRow = Row<EdgeTable>;

/**
 * What every edge create and update body has besides its modules (a type, not an interface, so a
 * body still reads as the `Record` of module fields that `modulesFromBody` takes).
 */
type EdgeBody = {
  description?: string;
  metadata?: string;
  hostports?: string[];
};

/** A kind of edge: a collection whose read form is its row, hostports and modules. */
export interface EdgeCollection<Item extends z.ZodType, List extends z.ZodType>
  extends Collection<EdgeTable, Item, List> {
  /** Singular resource name of the edge's `created`/`updated`/`deleted` events (module changes too). */
  eventResource: string;
  /** The module kinds of this edge, in the order of its read form. */
  modules: readonly ModuleKind[];
}

/** The facts of a kind of edge; its read form follows from them. */
export interface EdgeFacts<Item extends z.ZodType, List extends z.ZodType>
  extends Omit<EdgeCollection<Item, List>, 'idPrefix' | 'toWire' | 'toWireMany'> {
  /**
   * Members of the read form beyond the row (an HTTPS edge's routes), one object per row in row order;
   * gathered for a whole page at once, so a list costs one query rather than one per edge.
   */
  extraWire?(rows: EdgeRow[], ctx: RequestContext): Promise<Record<string, unknown>[]>;
}

/** Describes a kind of edge: `defineCollection` with the read form every edge has. */
export function defineEdgeCollection<Item extends z.ZodType, List extends z.ZodType>(
  facts: EdgeFacts<Item, List>,
): EdgeCollection<Item, List> {
  const { extraWire, ...rest } = facts;
  const toWireMany = async (rows: EdgeRow[], ctx: RequestContext): Promise<z.input<Item>[]> => {
    const extras = extraWire ? await extraWire(rows, ctx) : [];
    return rows.map(
      (row, index) =>
        ({
          ...describedToWire(row, ctx, facts.path),
          hostports: JSON.parse(row.hostports) as string[],
          ...modulesToWire(parseStoredModules(row.modules), facts.modules, ctx),
          ...extras[index],
        }) as z.input<Item>,
    );
  };
  const toWire = async (row: EdgeRow, ctx: RequestContext): Promise<z.input<Item>> =>
    (await toWireMany([row], ctx))[0] as z.input<Item>;
  return {
    ...defineCollection({ ...rest, toWire, toWireMany }),
    eventResource: facts.eventResource,
    modules: facts.modules,
  };
}

/** What the routes of a kind of edge say besides the edge's facts. */
export interface EdgeRoutes<
  Create extends z.ZodType<EdgeBody & { hostports: string[] }>,
  Update extends z.ZodType<EdgeBody>,
> {
  create: Create;
  update: Update;
  summaries: { create: string; update: string };
  /** Refuses hostports this kind of edge may not serve, before they are claimed (TCP: reserved ones). */
  checkHostports?(ctx: RequestContext, hostports: readonly string[]): Promise<void>;
  /**
   * Refuses module combinations this kind of edge cannot have (400), given all of its modules after
   * the change and the names of those the request sets (TLS: mutual_tls with TLS passed through).
   */
  checkModules?(modules: StoredModules, changed: readonly string[], source: ModuleChangeSource): void;
  /** Runs in the delete transaction before the edge's hostports are released and the row goes. */
  beforeDelete?(row: EdgeRow, ctx: RequestContext): Promise<void>;
}

/**
 * The routes of one kind of edge: POST create, PATCH update (an absent module is unchanged, a present
 * one replaces the old), GET list, GET one, DELETE (releasing the hostports), and PUT/GET/DELETE of
 * each module.
 */
export function defineEdgeRoutes<
  Item extends z.ZodType,
  List extends z.ZodType,
  Create extends z.ZodType<EdgeBody & { hostports: string[] }>,
  Update extends z.ZodType<EdgeBody>,
>(app: FastifyInstance, edges: EdgeCollection<Item, List>, routes: EdgeRoutes<Create, Update>): void {
  const { table, path, kind, modules } = edges;

  defineCreateRoute(app, edges, {
    summary: routes.summaries.create,
    body: routes.create,
    handler: async ({ body, ctx }) => {
      await routes.checkHostports?.(ctx, body.hostports);
      const described = newDescribedRow(edges.idPrefix, body, ctx);
      const stored = await modulesFromBody(body, modules, ctx, 'create', `${path}/{id}`, {
        table,
        id: described.id,
        modules: {},
      });
      routes.checkModules?.(stored, Object.keys(stored), 'body');
      const row = {
        ...described,
        hostports: JSON.stringify(body.hostports),
        modules: JSON.stringify(stored),
      };
      await claimHostports(ctx, row.id, body.hostports);
      await insertRow(ctx.db, table, row);
      return edges.toWire(row, ctx);
    },
  });
  defineUpdateRoute(app, edges, {
    summary: routes.summaries.update,
    body: routes.update,
    toChanges: async (body, row, ctx) => {
      const current = parseStoredModules(row.modules);
      const changed = await modulesFromBody(body, modules, ctx, 'update', `${path}/${row.id}`, {
        table,
        id: row.id,
        modules: current,
      });
      const merged = { ...current, ...changed };
      routes.checkModules?.(merged, Object.keys(changed), 'body');
      if (body.hostports !== undefined) {
        await routes.checkHostports?.(ctx, body.hostports);
        await claimHostports(ctx, row.id, body.hostports);
      }
      return {
        description: body.description,
        metadata: body.metadata,
        hostports: body.hostports === undefined ? undefined : JSON.stringify(body.hostports),
        modules: JSON.stringify(merged),
      };
    },
  });
  defineCollectionReads(app, edges, {
    // The hostports become free for another edge.
    beforeDelete: async (row, ctx) => {
      await routes.beforeDelete?.(row, ctx);
      await releaseHostports(ctx, row.id);
    },
  });
  defineModuleRoutes(
    app,
    {
      table,
      path: `${path}/:id`,
      params: idParams,
      kind,
      operationStem: edges.name,
      eventResource: edges.eventResource,
      tag: edges.tag,
      // Edge modules derive nothing from the edge's hostports (only route modules, SAML, do).
      load: async (params, ctx) => ({ ...(await requireRow(ctx.db, table, params.id, kind)), scope: {} }),
      readForm: async (params, ctx) => edges.toWire(await requireRow(ctx.db, table, params.id, kind), ctx),
      checkModules: routes.checkModules,
    },
    modules,
  );
}
