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
/** With ~55k ports per region a collision is rare; a few draws make failure vanishingly unlikely. */
const ADDR_ATTEMPTS = 8;

export function randomReservedPort(): number {
  return randomInt(RESERVED_PORT_MIN, RESERVED_PORT_MAX + 1);
}

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
 * Inserts the row with a free `<region>.<domain>:<port>`. `ON CONFLICT (addr) DO NOTHING` lets a
 * taken address be retried inside the same transaction on SQLite and PostgreSQL alike (a failed
 * INSERT would abort a PostgreSQL transaction), and the UNIQUE column keeps concurrent creates apart.
 */
export async function insertWithFreeAddr(
  db: Db,
  row: Omit<Row<'reserved_addrs'>, 'addr'>,
  domain: string,
  pickPort: () => number = randomReservedPort,
): Promise<Row<'reserved_addrs'>> {
  for (let attempt = 0; attempt < ADDR_ATTEMPTS; attempt++) {
    const candidate = { ...row, addr: `${row.region}.${domain}:${pickPort()}` };
    const result = await db
      .insertInto('reserved_addrs')
      .values(candidate)
      .onConflict((oc) => oc.column('addr').doNothing())
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0n) === 1) return candidate;
  }
  throw new ApiError(
    'ERR_EDGEWARD_900',
    `region: no free port found for a reserved address in region '${row.region}' after ${ADDR_ATTEMPTS} attempts; try again`,
  );
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
        () => randomInt(ctx.settings.tcpPortRange.min, ctx.settings.tcpPortRange.max + 1),
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
