import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { idParams } from '../../schemas/common.js';
import { claimHostports, releaseHostports } from '../edges/hostports.js';
import type { ModuleKind } from '../edges/module-kinds.js';
import {
  modulesFromBody,
  modulesToWire,
  parseStoredModules,
  type StoredModules,
} from '../edges/stored-modules.js';
import type { ModuleChangeSource } from '../edges/tls-passthrough.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import {
  defineCollectionReads,
  defineUpdateRoute,
  describedToWire,
  insertRow,
  newDescribedRow,
  type Row,
  requireRow,
} from './collection.js';
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

export interface EdgeCollectionSpec<
  Item extends z.ZodType,
  List extends z.ZodType,
  Create extends z.ZodType<EdgeBody & { hostports: string[] }>,
  Update extends z.ZodType<EdgeBody>,
> {
  table: EdgeTable;
  /** Collection path, e.g. `/edges/tls`. */
  path: string;
  /** Id prefix of a new edge, e.g. `edgtls`. */
  idPrefix: string;
  /** Human name used in messages: "TLS edge with id ... not found". */
  kind: string;
  /** Operation id stem: `TLSEdge` -> createTLSEdge, getTLSEdge, replaceTLSEdgeBackendModule. */
  name: string;
  plural: string;
  tag: string;
  /** Singular resource name of the edge's `created`/`updated`/`deleted` events. */
  eventResource: string;
  listKey: string;
  /** The module kinds of this edge, in the order of its read form. */
  modules: readonly ModuleKind[];
  item: Item;
  list: List;
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
  /**
   * Members of the read form beyond the row (an HTTPS edge's routes), one object per row in row order;
   * gathered for a whole page at once, so a list costs one query rather than one per edge.
   */
  extraWire?(rows: EdgeRow[], ctx: RequestContext): Promise<Record<string, unknown>[]>;
  /** Runs in the delete transaction before the edge's hostports are released and the row goes. */
  beforeDelete?(row: EdgeRow, ctx: RequestContext): Promise<void>;
}

/**
 * The routes of one kind of edge: POST create, PATCH update (an absent module is unchanged, a present
 * one replaces the old), GET list, GET one, DELETE (releasing the hostports), and PUT/GET/DELETE of
 * each module.
 */
export function defineEdgeCollection<
  Item extends z.ZodType,
  List extends z.ZodType,
  Create extends z.ZodType<EdgeBody & { hostports: string[] }>,
  Update extends z.ZodType<EdgeBody>,
>(app: FastifyInstance, spec: EdgeCollectionSpec<Item, List, Create, Update>): void {
  const { table, path, kind, tag, eventResource, modules } = spec;

  const toWireMany = async (rows: EdgeRow[], ctx: RequestContext): Promise<z.input<Item>[]> => {
    const extras = spec.extraWire ? await spec.extraWire(rows, ctx) : [];
    return rows.map(
      (row, index) =>
        ({
          ...describedToWire(row, ctx, path),
          hostports: JSON.parse(row.hostports) as string[],
          ...modulesToWire(parseStoredModules(row.modules), modules, ctx),
          ...extras[index],
        }) as z.input<Item>,
    );
  };
  const toWire = async (row: EdgeRow, ctx: RequestContext): Promise<z.input<Item>> =>
    (await toWireMany([row], ctx))[0] as z.input<Item>;

  defineRoute(app, {
    method: 'POST',
    url: path,
    operationId: `create${spec.name}`,
    summary: spec.summaries.create,
    tag,
    body: spec.create,
    status: 201,
    response: spec.item,
    idempotent: true,
    event: { resource: eventResource, action: 'created' },
    handler: async ({ body, ctx }) => {
      await spec.checkHostports?.(ctx, body.hostports);
      const described = newDescribedRow(spec.idPrefix, body, ctx);
      const stored = await modulesFromBody(body, modules, ctx, 'create', `${path}/{id}`, {
        table,
        id: described.id,
        modules: {},
      });
      spec.checkModules?.(stored, Object.keys(stored), 'body');
      const row = {
        ...described,
        hostports: JSON.stringify(body.hostports),
        modules: JSON.stringify(stored),
      };
      await claimHostports(ctx, row.id, body.hostports);
      await insertRow(ctx.db, table, row);
      return toWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table,
    eventResource,
    path,
    kind,
    name: spec.name,
    tag,
    summary: spec.summaries.update,
    body: spec.update,
    item: spec.item,
    toChanges: async (body, row, ctx) => {
      const current = parseStoredModules(row.modules);
      const changed = await modulesFromBody(body, modules, ctx, 'update', `${path}/${row.id}`, {
        table,
        id: row.id,
        modules: current,
      });
      const merged = { ...current, ...changed };
      spec.checkModules?.(merged, Object.keys(changed), 'body');
      if (body.hostports !== undefined) {
        await spec.checkHostports?.(ctx, body.hostports);
        await claimHostports(ctx, row.id, body.hostports);
      }
      return {
        description: body.description,
        metadata: body.metadata,
        hostports: body.hostports === undefined ? undefined : JSON.stringify(body.hostports),
        modules: JSON.stringify(merged),
      };
    },
    toWire,
  });
  defineCollectionReads(app, {
    table,
    eventResource,
    path,
    listKey: spec.listKey,
    kind,
    name: spec.name,
    plural: spec.plural,
    tag,
    item: spec.item,
    list: spec.list,
    toWire,
    toWireMany,
    // The hostports become free for another edge.
    beforeDelete: async (row, ctx) => {
      await spec.beforeDelete?.(row, ctx);
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
      operationStem: spec.name,
      eventResource,
      tag,
      // Edge modules derive nothing from the edge's hostports (only route modules, SAML, do).
      load: async (params, ctx) => ({ ...(await requireRow(ctx.db, table, params.id, kind)), scope: {} }),
      readForm: async (params, ctx) => toWire(await requireRow(ctx.db, table, params.id, kind), ctx),
      checkModules: spec.checkModules,
    },
    modules,
  );
}
