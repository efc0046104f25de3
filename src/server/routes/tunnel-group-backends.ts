import type { FastifyInstance } from 'fastify';
import {
  type TunnelGroupBackend,
  tunnelGroupBackend,
  tunnelGroupBackendCreate,
  tunnelGroupBackendList,
  tunnelGroupBackendUpdate,
} from '../../schemas/tunnel-group-backends.js';
import { MODULE_OWNERS, type ModuleOwnerTable, moduleOwnersReferencing } from '../edges/module-references.js';
import { inUse } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import type { Db } from '../store/database.js';
import {
  defineCollectionReads,
  defineUpdateRoute,
  describedToWire,
  insertRow,
  newDescribedRow,
  type Row,
} from './collection.js';

const TAG = 'Backends';
const KIND = 'tunnel-group backend';
const PATH = '/backends/tunnel_group';

export function tunnelGroupBackendToWire(
  row: Row<'tunnel_group_backends'>,
  ctx: RequestContext,
): TunnelGroupBackend {
  return {
    ...describedToWire(row, ctx, PATH),
    labels: JSON.parse(row.labels) as Record<string, string>,
    // Tunnel sessions do not carry labels yet (agents cannot connect to this server), so no
    // session can match: always empty until live tunnels exist.
    tunnels: [],
  };
}

/** The first edge or route whose modules reference the backend, as `<kind> <id>`. */
async function moduleHolderOf(db: Db, backendId: string): Promise<string | undefined> {
  const tables = Object.keys(MODULE_OWNERS) as ModuleOwnerTable[];
  const [holder] = await moduleOwnersReferencing(db, tables, backendId, (modules) =>
    mentions(modules, backendId),
  );
  return holder ? `${MODULE_OWNERS[holder.table]} ${holder.id}` : undefined;
}

/** True when `id` appears as a string value anywhere in the parsed modules object. */
function mentions(value: unknown, id: string): boolean {
  if (value === id) return true;
  if (value === null || typeof value !== 'object') return false;
  return Object.values(value).some((member) => mentions(member, id));
}

export async function tunnelGroupBackendRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: PATH,
    operationId: 'createTunnelGroupBackend',
    summary: 'Create a tunnel-group backend: traffic goes to the online tunnels carrying its labels',
    tag: TAG,
    body: tunnelGroupBackendCreate,
    status: 201,
    response: tunnelGroupBackend,
    idempotent: true,
    event: { resource: 'tunnel_group_backend', action: 'created' },
    handler: async ({ body, ctx }) => {
      const row = { ...newDescribedRow('bkdtg', body, ctx), labels: JSON.stringify(body.labels) };
      await insertRow(ctx.db, 'tunnel_group_backends', row);
      return tunnelGroupBackendToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'tunnel_group_backends',
    eventResource: 'tunnel_group_backend',
    path: PATH,
    kind: KIND,
    name: 'TunnelGroupBackend',
    tag: TAG,
    summary: 'Update a tunnel-group backend; labels, when given, replace the whole set',
    body: tunnelGroupBackendUpdate,
    item: tunnelGroupBackend,
    toChanges: ({ labels, ...described }) => ({
      ...described,
      labels: labels === undefined ? undefined : JSON.stringify(labels),
    }),
    toWire: tunnelGroupBackendToWire,
  });
  defineCollectionReads(app, {
    table: 'tunnel_group_backends',
    eventResource: 'tunnel_group_backend',
    path: PATH,
    listKey: 'backends',
    kind: KIND,
    name: 'TunnelGroupBackend',
    plural: 'TunnelGroupBackends',
    tag: TAG,
    item: tunnelGroupBackend,
    list: tunnelGroupBackendList,
    toWire: tunnelGroupBackendToWire,
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
