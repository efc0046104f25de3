import { randomInt } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import {
  type ReservedAddr,
  reservedAddr,
  reservedAddrCreate,
  reservedAddrList,
  reservedAddrUpdate,
} from '../../schemas/reserved-addrs.js';
import { ApiError, badReference, inUse } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import type { Db } from '../store/database.js';
import type { Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';

const RESERVED_ADDRS = defineCollection({
  table: 'reserved_addrs',
  path: '/reserved_addrs',
  kind: 'reserved address',
  name: 'ReservedAddr',
  plural: 'ReservedAddrs',
  tag: 'Reserved addresses',
  eventResource: 'reserved_addr',
  listKey: 'reserved_addrs',
  item: reservedAddr,
  list: reservedAddrList,
  toWire: reservedAddrToWire,
});

/** Ports below 10000 are left to well-known and registered services. */
export const RESERVED_PORT_MIN = 10000;
export const RESERVED_PORT_MAX = 65535;
/** With ~55k ports per region a collision is rare: a few random draws, then a read of the free ports. */
const ADDR_ATTEMPTS = 8;

export function reservedAddrToWire(row: Row<'reserved_addrs'>, ctx: RequestContext): ReservedAddr {
  return {
    ...describedToWire(row, ctx, RESERVED_ADDRS.path),
    addr: row.addr,
    region: row.region as ReservedAddr['region'],
    // Endpoint configurations are not built, so none can be attached.
    endpoint_configuration: null,
  };
}

/**
 * Inserts the row with a free `<region>.<domain>:<port>`, a port of `range`. `ON CONFLICT (addr) DO
 * NOTHING` lets a taken address be retried inside the same transaction on SQLite and PostgreSQL
 * alike (a failed INSERT would abort a PostgreSQL transaction), and the UNIQUE column keeps
 * concurrent creates apart. A few random draws almost always find a port; when they do not (a
 * narrow `--tcp-port-range` nearly full), the free ports are read and one of them is taken, so a
 * create fails only when every port of the range is reserved.
 */
export async function insertWithFreeAddr(
  db: Db,
  row: Omit<Row<'reserved_addrs'>, 'addr'>,
  domain: string,
  range: { min: number; max: number },
  drawPort: () => number = () => randomInt(range.min, range.max + 1),
): Promise<Row<'reserved_addrs'>> {
  const prefix = `${row.region}.${domain}:`;
  const tryPort = async (port: number) => {
    const candidate = { ...row, addr: `${prefix}${port}` };
    const result = await db
      .insertInto('reserved_addrs')
      .values(candidate)
      .onConflict((oc) => oc.column('addr').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1 ? candidate : undefined;
  };
  for (let attempt = 0; attempt < ADDR_ATTEMPTS; attempt++) {
    const inserted = await tryPort(drawPort());
    if (inserted) return inserted;
  }
  for (let attempt = 0; attempt < ADDR_ATTEMPTS; attempt++) {
    const free = await freePorts(db, prefix, range);
    if (free.length === 0) break;
    const inserted = await tryPort(free[randomInt(free.length)] as number);
    if (inserted) return inserted;
  }
  throw new ApiError(
    'ERR_EDGEWARD_900',
    `region: every port of ${range.min}-${range.max} is reserved in region '${row.region}'; release an address or widen the server's --tcp-port-range`,
  );
}

/** The ports of `range` no address starting with `prefix` holds. */
async function freePorts(db: Db, prefix: string, range: { min: number; max: number }): Promise<number[]> {
  const taken = new Set(
    (await db.selectFrom('reserved_addrs').select('addr').where('addr', 'like', `${prefix}%`).execute()).map(
      ({ addr }) => Number(addr.slice(prefix.length)),
    ),
  );
  const free: number[] = [];
  for (let port = range.min; port <= range.max; port++) if (!taken.has(port)) free.push(port);
  return free;
}

export async function reservedAddrRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, RESERVED_ADDRS, {
    summary: 'Reserve a TCP address (hostname:port) in a region',
    body: reservedAddrCreate,
    handler: async ({ body, ctx }) => {
      const row = await insertWithFreeAddr(
        ctx.db,
        {
          ...newDescribedRow(RESERVED_ADDRS.idPrefix, body, ctx),
          region: body.region ?? 'us',
          endpoint_configuration_id: null,
        },
        ctx.settings.tcpAddrDomain,
        ctx.settings.tcpPortRange,
      );
      return reservedAddrToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, RESERVED_ADDRS, {
    summary: 'Update the description or metadata of a reserved address (region and addr are fixed)',
    body: reservedAddrUpdate,
    toChanges: (body) => {
      const { endpoint_configuration_id: endpointConfigurationId, ...changes } = body;
      // null or "" detaches, which is already the case; any id names something that cannot exist yet.
      if (endpointConfigurationId) {
        throw badReference('endpoint_configuration_id', endpointConfigurationId, 'endpoint configuration');
      }
      return changes;
    },
  });
  defineCollectionReads(app, RESERVED_ADDRS, {
    // An address a TCP edge listens on stays reserved until the edge lets go of it.
    beforeDelete: async (row, ctx) => {
      const user = await ctx.db
        .selectFrom('edge_hostports')
        .select('edge_id')
        .where('hostport', '=', row.addr)
        .executeTakeFirst();
      if (user) throw inUse(`reserved address ${row.id} (${row.addr}) is served by edge ${user.edge_id}`);
    },
  });
}
