import type { FastifyInstance } from 'fastify';
import {
  type TunnelGroupBackend,
  tunnelGroupBackend,
  tunnelGroupBackendCreate,
  tunnelGroupBackendList,
  tunnelGroupBackendUpdate,
} from '../../schemas/tunnel-group-backends.js';
import {
  MODULE_OWNERS,
  type ModuleOwnerTable,
  moduleOwnersReferencing,
} from '../edge-resources/module-references.js';
import { inUse } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import type { Db } from '../store/database.js';
import { insertRow, type Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';

const TUNNEL_GROUP_BACKENDS = defineCollection({
  table: 'tunnel_group_backends',
  path: '/backends/tunnel_group',
  kind: 'tunnel-group backend',
  name: 'TunnelGroupBackend',
  plural: 'TunnelGroupBackends',
  tag: 'Backends',
  eventResource: 'tunnel_group_backend',
  listKey: 'backends',
  item: tunnelGroupBackend,
  list: tunnelGroupBackendList,
  toWire: tunnelGroupBackendToWire,
  toWireMany: tunnelGroupBackendsToWire,
});

export async function tunnelGroupBackendToWire(
  row: Row<'tunnel_group_backends'>,
  ctx: RequestContext,
): Promise<TunnelGroupBackend> {
  const [item] = await tunnelGroupBackendsToWire([row], ctx);
  return item as TunnelGroupBackend;
}

/** A page of backends with one read of the online sessions for all of them. */
async function tunnelGroupBackendsToWire(
  rows: Row<'tunnel_group_backends'>[],
  ctx: RequestContext,
): Promise<TunnelGroupBackend[]> {
  const sessions = await ctx.db
    .selectFrom('tunnel_sessions')
    .select(['id', 'labels'])
    .orderBy('id')
    .execute();
  const sessionLabels = sessions.map((session) => ({
    id: session.id,
    labels: JSON.parse(session.labels) as Record<string, string>,
  }));
  return rows.map((row) => {
    const labels = JSON.parse(row.labels) as Record<string, string>;
    return {
      ...describedToWire(row, ctx, TUNNEL_GROUP_BACKENDS.path),
      labels,
      // The tunnel group: online sessions that bind every label of the backend.
      tunnels: sessionLabels
        .filter((session) => Object.entries(labels).every(([key, value]) => session.labels[key] === value))
        .map((session) => ({ id: session.id, uri: ctx.url(`/tunnel_sessions/${session.id}`) })),
    };
  });
}

/** The first edge or route whose modules reference the backend, as `<kind> <id>`. */
async function moduleHolderOf(db: Db, backendId: string): Promise<string | undefined> {
  const tables = Object.keys(MODULE_OWNERS) as ModuleOwnerTable[];
  const [holder] = await moduleOwnersReferencing(db, tables, backendId, (modules) =>
    mentions(modules, backendId),
  );
  return holder ? `${MODULE_OWNERS[holder.table]} ${holder.id}` : undefined;
}

/**
 * True when `id` appears as a string value anywhere in the parsed modules object. Iterative: the
 * modules hold free-form members (a policy's log metadata) that rows written before bodies had a
 * depth limit may nest thousands of levels deep.
 */
function mentions(modules: unknown, id: string): boolean {
  const pending: unknown[] = [modules];
  while (pending.length > 0) {
    const value = pending.pop();
    if (value === id) return true;
    if (value !== null && typeof value === 'object')
      for (const member of Object.values(value)) pending.push(member);
  }
  return false;
}

export async function tunnelGroupBackendRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, TUNNEL_GROUP_BACKENDS, {
    summary: 'Create a tunnel-group backend: traffic goes to the online tunnels carrying its labels',
    body: tunnelGroupBackendCreate,
    handler: async ({ body, ctx }) => {
      const row = {
        ...newDescribedRow(TUNNEL_GROUP_BACKENDS.idPrefix, body, ctx),
        labels: JSON.stringify(body.labels),
      };
      await insertRow(ctx.db, TUNNEL_GROUP_BACKENDS.table, row);
      return tunnelGroupBackendToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, TUNNEL_GROUP_BACKENDS, {
    summary: 'Update a tunnel-group backend; labels, when given, replace the whole set',
    body: tunnelGroupBackendUpdate,
    toChanges: ({ labels, ...described }) => ({
      ...described,
      labels: labels === undefined ? undefined : JSON.stringify(labels),
    }),
  });
  defineCollectionReads(app, TUNNEL_GROUP_BACKENDS, {
    // An edge must never route to a backend that is gone: the caller detaches it first.
    beforeDelete: async (row, ctx) => {
      const holder = await moduleHolderOf(ctx.db, row.id);
      if (holder) {
        throw inUse(
          `id: tunnel-group backend ${row.id} is used by the backend module of ${holder}; remove it there first`,
        );
      }
    },
  });
}
