import { type Insertable, PostgresAdapter, sql } from 'kysely';
import { newId } from '../../crypto/ids.js';
import type { Db } from '../store/database.js';
import type { DeliveryState, EventDeliveriesTable } from '../store/tables.js';

/**
 * The outbox's delivery bookkeeping in SQL: routing events to destinations, leasing a destination
 * to one dispatcher, reading its queue in order, recording what a send achieved, health and
 * retention. Every function is one transaction or one statement, so a crash between two leaves
 * nothing half done: at worst an event is sent again (at least once), never lost.
 */

/** Rows per INSERT: well under SQLite's bound-parameter limit. */
const INSERT_CHUNK = 200;

/** ISO 8601 with milliseconds: fixed width, so text comparison orders it (scheduling columns). */
export const isoMillis = (ms: number) => new Date(ms).toISOString();

function isPostgres(db: Db): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * Gives up to `limit` unrouted events, oldest first, one delivery row per destination of every
 * subscription listing their type, and marks them routed: all in one transaction. On PostgreSQL a
 * transaction-scoped advisory lock lets one replica route at a time (the others skip this round),
 * so routing order, which is delivery order, is one sequence. Returns how many events it routed.
 */
export async function routeEvents(db: Db, limit: number, now: number = Date.now()): Promise<number> {
  return db.transaction().execute(async (trx) => {
    if (isPostgres(trx)) {
      const { rows } = await sql<{ locked: boolean }>`
        SELECT pg_try_advisory_xact_lock(hashtext('edgeward_event_router')) AS locked`.execute(trx);
      if (!rows[0]?.locked) return 0;
    }
    const events = await trx
      .selectFrom('events')
      .select(['id', 'type'])
      .where('routed_at', 'is', null)
      // The order the database numbered the inserts: `seq` on PostgreSQL, the rowid on SQLite.
      .orderBy(isPostgres(trx) ? sql`seq` : sql`rowid`)
      .limit(limit)
      .execute();
    if (events.length === 0) return 0;
    const destinationsByType = await destinationsByEventType(trx);
    const deliveries: Insertable<EventDeliveriesTable>[] = [];
    for (const event of events) {
      for (const destinationId of destinationsByType.get(event.type) ?? []) {
        deliveries.push({
          id: newId('evd'),
          event_id: event.id,
          destination_id: destinationId,
          state: 'pending',
          attempts: 0,
        });
      }
    }
    for (let start = 0; start < deliveries.length; start += INSERT_CHUNK) {
      await trx
        .insertInto('event_deliveries')
        .values(deliveries.slice(start, start + INSERT_CHUNK))
        .onConflict((conflict) => conflict.columns(['event_id', 'destination_id']).doNothing())
        .execute();
    }
    const destinationIds = [...new Set(deliveries.map((delivery) => delivery.destination_id))];
    if (destinationIds.length > 0) {
      await trx
        .insertInto('event_destination_delivery')
        .values(
          destinationIds.map((destination_id) => ({
            destination_id,
            consecutive_failures: 0,
            delivered_total: 0,
          })),
        )
        .onConflict((conflict) => conflict.column('destination_id').doNothing())
        .execute();
    }
    const routedAt = isoMillis(now);
    for (let start = 0; start < events.length; start += INSERT_CHUNK) {
      const ids = events.slice(start, start + INSERT_CHUNK).map((event) => event.id);
      await trx.updateTable('events').set({ routed_at: routedAt }).where('id', 'in', ids).execute();
    }
    return events.length;
  });
}

/** Event type -> destination ids, each once, in the order subscriptions (oldest first) list them. */
async function destinationsByEventType(db: Db): Promise<Map<string, string[]>> {
  const subscriptions = await db
    .selectFrom('event_subscriptions')
    .select(['source_types', 'destination_ids'])
    .orderBy('id')
    .execute();
  const byType = new Map<string, Set<string>>();
  for (const subscription of subscriptions) {
    const destinations = JSON.parse(subscription.destination_ids) as string[];
    for (const type of JSON.parse(subscription.source_types) as string[]) {
      const set = byType.get(type) ?? new Set<string>();
      for (const destination of destinations) set.add(destination);
      byType.set(type, set);
    }
  }
  return new Map([...byType].map(([type, set]) => [type, [...set]]));
}

/**
 * The database's clock (milliseconds since the epoch). Leases and retry times are compared by
 * several replicas on PostgreSQL: reading one clock keeps a replica whose own clock is ahead from
 * taking a lease that is still current.
 */
export async function databaseNow(db: Db): Promise<number> {
  // SQLite is a file of this process's machine: its clock is ours, no query needed.
  if (!isPostgres(db)) return Date.now();
  const { rows } = await sql<{ ms: string | number }>`
    SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS ms`.execute(db);
  return Number(rows[0]?.ms);
}

/**
 * Leases up to `limit` destinations that have pending deliveries, are not backing off and are not
 * leased by a live dispatcher. Each lease is one conditional UPDATE (compare-and-set on the lease
 * columns), so of two replicas racing for a destination exactly one wins; a dispatcher that dies
 * loses its leases when they expire.
 */
export async function leaseDueDestinations(
  db: Db,
  owner: string,
  leaseMs: number,
  limit: number,
  now: number,
  skip: ReadonlySet<string> = new Set(),
): Promise<string[]> {
  const nowIso = isoMillis(now);
  const candidates = await db
    .selectFrom('event_destination_delivery as s')
    .leftJoin('event_destinations as d', 'd.id', 's.destination_id')
    .select('s.destination_id')
    .where((eb) => eb.or([eb('s.lease_expires_at', 'is', null), eb('s.lease_expires_at', '<', nowIso)]))
    .where((eb) =>
      eb.or([
        eb('s.next_attempt_at', 'is', null),
        eb('s.next_attempt_at', '<=', nowIso),
        // A deleted destination's queue is dropped at once, backoff or not.
        eb('d.id', 'is', null),
      ]),
    )
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('event_deliveries as q')
          .select('q.seq')
          .whereRef('q.destination_id', '=', 's.destination_id')
          .where('q.state', '=', 'pending'),
      ),
    )
    // Round robin: the destination whose last turn is oldest goes first ('' sorts first everywhere).
    .orderBy(sql`coalesce(s.last_turn_at, '')`)
    .limit(limit + skip.size)
    .execute();
  const leased: string[] = [];
  for (const { destination_id } of candidates) {
    if (leased.length >= limit) break;
    if (skip.has(destination_id)) continue;
    const result = await db
      .updateTable('event_destination_delivery')
      .set({ lease_owner: owner, lease_expires_at: isoMillis(now + leaseMs), last_turn_at: nowIso })
      .where('destination_id', '=', destination_id)
      .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', nowIso)]))
      .executeTakeFirst();
    if (result.numUpdatedRows > 0n) leased.push(destination_id);
  }
  return leased;
}

/**
 * SQLite: one server process uses the file, so leases left by a process that died (kill -9, power
 * loss) belong to no one alive; they are dropped at start instead of waiting for them to expire.
 * On PostgreSQL other replicas may be alive: their leases are left to expire.
 */
export async function dropLeasesOfDeadProcesses(db: Db): Promise<void> {
  if (isPostgres(db)) return;
  await db
    .updateTable('event_destination_delivery')
    .set({ lease_owner: null, lease_expires_at: null })
    .execute();
}

/** Gives the lease back (only if still ours), so another round may pick the destination again. */
export async function releaseLease(db: Db, destinationId: string, owner: string): Promise<void> {
  await db
    .updateTable('event_destination_delivery')
    .set({ lease_owner: null, lease_expires_at: null })
    .where('destination_id', '=', destinationId)
    .where('lease_owner', '=', owner)
    .execute();
}

export interface PendingDelivery {
  deliveryId: string;
  eventId: string;
  type: string;
  objectId: string;
  createdAt: string;
  /** The stored JSON `{object}` of the event. */
  payload: string;
}

/**
 * The destination's next pending deliveries, in routing order: at most `limit`, and only as many as
 * hold about `byteBudget` of payload (at least one), so a turn never loads more than a call or two
 * can carry.
 */
export async function pendingDeliveries(
  db: Db,
  destinationId: string,
  limit: number,
  byteBudget: number,
): Promise<PendingDelivery[]> {
  const queue = await db
    .selectFrom('event_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select([
      'd.id as deliveryId',
      'e.id as eventId',
      'e.type',
      'e.object_id as objectId',
      'e.created_at as createdAt',
      (eb) => eb.fn<string | number>('length', ['e.payload']).as('bytes'),
    ])
    .where('d.destination_id', '=', destinationId)
    .where('d.state', '=', 'pending')
    .orderBy('d.seq')
    .limit(limit)
    .execute();
  const taken: typeof queue = [];
  let bytes = 0;
  for (const row of queue) {
    bytes += Number(row.bytes);
    if (taken.length > 0 && bytes > byteBudget) break;
    taken.push(row);
  }
  if (taken.length === 0) return [];
  const payloads = new Map<string, string>();
  for (let start = 0; start < taken.length; start += INSERT_CHUNK) {
    const ids = taken.slice(start, start + INSERT_CHUNK).map((row) => row.eventId);
    for (const row of await db
      .selectFrom('events')
      .select(['id', 'payload'])
      .where('id', 'in', ids)
      .execute()) {
      payloads.set(row.id, row.payload);
    }
  }
  return taken.map(({ bytes: _bytes, ...row }) => ({ ...row, payload: payloads.get(row.eventId) ?? '{}' }));
}

export interface SendOutcome {
  delivered: string[];
  /** Deliveries the target can never accept: kept with their reason, not retried. */
  undeliverable: { deliveryId: string; error: string }[];
  /** Deliveries to try again (a failed call, or records the target refused for now). */
  retry: string[];
  /** Why the turn failed: the destination backs off. */
  error?: string;
}

/**
 * Records what one send achieved, in one transaction: delivered and undeliverable rows leave the
 * queue and count in the destination's health whoever holds the lease (the target took them). The
 * retry schedule and the lease are touched only while the lease is still this dispatcher's: a
 * failure backs off to `now + backoffMs`, a clean send clears the backoff, and the lease is
 * extended. Returns whether the lease is still ours (if not, the turn ends).
 */
export async function recordSend(
  db: Db,
  destinationId: string,
  owner: string,
  outcome: SendOutcome,
  schedule: { now: number; leaseMs: number; backoffMs: (failures: number) => number },
): Promise<boolean> {
  const nowIso = isoMillis(schedule.now);
  return db.transaction().execute(async (trx) => {
    const attempted = [
      ...outcome.delivered,
      ...outcome.undeliverable.map((u) => u.deliveryId),
      ...outcome.retry,
    ];
    for (let start = 0; start < attempted.length; start += INSERT_CHUNK) {
      await trx
        .updateTable('event_deliveries')
        .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
        .where('id', 'in', attempted.slice(start, start + INSERT_CHUNK))
        .where('state', '=', 'pending')
        .execute();
    }
    let delivered = 0;
    for (let start = 0; start < outcome.delivered.length; start += INSERT_CHUNK) {
      const result = await trx
        .updateTable('event_deliveries')
        .set({ state: 'delivered', delivered_at: nowIso, last_error: null })
        .where('id', 'in', outcome.delivered.slice(start, start + INSERT_CHUNK))
        .where('state', '=', 'pending')
        .executeTakeFirst();
      delivered += Number(result.numUpdatedRows);
    }
    for (const { deliveryId, error } of outcome.undeliverable) {
      await trx
        .updateTable('event_deliveries')
        .set({ state: 'undeliverable', last_error: error })
        .where('id', '=', deliveryId)
        .where('state', '=', 'pending')
        .execute();
    }
    const failed = outcome.error !== undefined;
    for (let start = 0; start < outcome.retry.length; start += INSERT_CHUNK) {
      await trx
        .updateTable('event_deliveries')
        .set({ last_error: outcome.error ?? 'not accepted' })
        .where('id', 'in', outcome.retry.slice(start, start + INSERT_CHUNK))
        .where('state', '=', 'pending')
        .execute();
    }
    if (delivered > 0) {
      await trx
        .updateTable('event_destination_delivery')
        .set((eb) => ({ delivered_total: eb('delivered_total', '+', delivered), last_success_at: nowIso }))
        .where('destination_id', '=', destinationId)
        .execute();
    }
    const state = await trx
      .selectFrom('event_destination_delivery')
      .select(['consecutive_failures'])
      .where('destination_id', '=', destinationId)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    if (!state) return false; // the lease expired and went to another dispatcher, or the destination went
    const failures = failed ? state.consecutive_failures + 1 : 0;
    await trx
      .updateTable('event_destination_delivery')
      .set({
        consecutive_failures: failures,
        next_attempt_at: failed ? isoMillis(schedule.now + schedule.backoffMs(failures)) : null,
        ...(failed ? { last_error: outcome.error ?? 'not accepted', last_error_at: nowIso } : {}),
        lease_expires_at: isoMillis(schedule.now + schedule.leaseMs),
      })
      .where('destination_id', '=', destinationId)
      .where('lease_owner', '=', owner)
      .execute();
    return true;
  });
}

/** A destination that works again (a test event went through): retry its backlog now. */
export async function clearBackoff(db: Db, destinationId: string): Promise<void> {
  await db
    .updateTable('event_destination_delivery')
    .set({ next_attempt_at: null })
    .where('destination_id', '=', destinationId)
    .execute();
}

/** A deleted destination's queue and state go with it. Returns how many deliveries were still pending. */
export async function forgetDestination(db: Db, destinationId: string): Promise<number> {
  const pending = await db
    .deleteFrom('event_deliveries')
    .where('destination_id', '=', destinationId)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  await db.deleteFrom('event_deliveries').where('destination_id', '=', destinationId).execute();
  await db.deleteFrom('event_destination_delivery').where('destination_id', '=', destinationId).execute();
  return Number(pending.numDeletedRows);
}

export interface DestinationHealth {
  backlog: number;
  oldestPendingAt: string | null;
  undeliverable: number;
  delivered: number;
  consecutiveFailures: number;
  nextAttemptAt: string | null;
  lastSuccessAt: string | null;
  lastError: { message: string; at: string } | null;
}

export async function destinationHealth(db: Db, destinationId: string): Promise<DestinationHealth> {
  const state = await db
    .selectFrom('event_destination_delivery')
    .selectAll()
    .where('destination_id', '=', destinationId)
    .executeTakeFirst();
  const counts = await db
    .selectFrom('event_deliveries')
    .select(['state', (eb) => eb.fn.countAll<string | number>().as('count')])
    .where('destination_id', '=', destinationId)
    .where('state', 'in', ['pending', 'undeliverable'])
    .groupBy('state')
    .execute();
  const oldest = await db
    .selectFrom('event_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select('e.created_at')
    .where('d.destination_id', '=', destinationId)
    .where('d.state', '=', 'pending')
    .orderBy('d.seq')
    .limit(1)
    .executeTakeFirst();
  const count = (state: DeliveryState) => Number(counts.find((row) => row.state === state)?.count ?? 0);
  const unrouted = await unroutedFor(db, destinationId);
  return {
    backlog: count('pending') + unrouted.count,
    oldestPendingAt: oldest?.created_at ?? unrouted.oldest,
    undeliverable: count('undeliverable'),
    delivered: Number(state?.delivered_total ?? 0),
    consecutiveFailures: state?.consecutive_failures ?? 0,
    nextAttemptAt: state?.next_attempt_at ?? null,
    lastSuccessAt: state?.last_success_at ?? null,
    lastError:
      state?.last_error && state.last_error_at
        ? { message: state.last_error, at: state.last_error_at }
        : null,
  };
}

/** The event subscriptions that list the destination, oldest first. */
export async function subscriptionsListing(
  db: Db,
  destinationId: string,
): Promise<{ id: string; source_types: string }[]> {
  // LIKE narrows the scan (`_` in ids is a wildcard, so it may over-match); the JSON check decides.
  const candidates = await db
    .selectFrom('event_subscriptions')
    .select(['id', 'source_types', 'destination_ids'])
    .where('destination_ids', 'like', `%"${destinationId}"%`)
    .orderBy('id', 'asc')
    .execute();
  return candidates
    .filter((row) => (JSON.parse(row.destination_ids) as string[]).includes(destinationId))
    .map(({ id, source_types }) => ({ id, source_types }));
}

/**
 * Committed events the dispatcher has not routed yet whose type a subscription of the destination
 * names: they belong to its backlog too (unless the subscription changes before they are routed).
 */
async function unroutedFor(db: Db, destinationId: string): Promise<{ count: number; oldest: string | null }> {
  const types = new Set<string>();
  for (const subscription of await subscriptionsListing(db, destinationId)) {
    for (const type of JSON.parse(subscription.source_types) as string[]) types.add(type);
  }
  if (types.size === 0) return { count: 0, oldest: null };
  const row = await db
    .selectFrom('events')
    .select([
      (eb) => eb.fn.countAll<string | number>().as('count'),
      (eb) => eb.fn.min('created_at').as('oldest'),
    ])
    .where('routed_at', 'is', null)
    .where('type', 'in', [...types])
    .executeTakeFirst();
  return { count: Number(row?.count ?? 0), oldest: (row?.oldest as string | null | undefined) ?? null };
}

/** Pending deliveries per destination that has ever had any (0 when its queue is empty), for the backlog gauge. */
export async function backlogs(db: Db): Promise<Map<string, number>> {
  const known = await db.selectFrom('event_destination_delivery').select('destination_id').execute();
  const rows = await db
    .selectFrom('event_deliveries')
    .select(['destination_id', (eb) => eb.fn.countAll<string | number>().as('count')])
    .where('state', '=', 'pending')
    .groupBy('destination_id')
    .execute();
  const counts = new Map<string, number>(known.map((row) => [row.destination_id, 0]));
  for (const row of rows) counts.set(row.destination_id, Number(row.count));
  return counts;
}

/**
 * Retention: events older than `before` whose every delivery is delivered go, with their delivery
 * rows. An event with a pending or undeliverable delivery stays (the latter visible in its
 * destination's status until the destination is deleted). Returns how many events went.
 */
export async function pruneEvents(db: Db, before: string, batch = 1000): Promise<number> {
  let removed = 0;
  for (;;) {
    const done = await db.transaction().execute(async (trx) => {
      const ids = (
        await trx
          .selectFrom('events as e')
          .select('e.id')
          .where('e.routed_at', 'is not', null)
          .where('e.created_at', '<', before)
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom('event_deliveries as d')
                  .select('d.seq')
                  .whereRef('d.event_id', '=', 'e.id')
                  .where('d.state', 'in', ['pending', 'undeliverable']),
              ),
            ),
          )
          .orderBy('e.id')
          .limit(batch)
          .execute()
      ).map((row) => row.id);
      if (ids.length === 0) return 0;
      for (let start = 0; start < ids.length; start += INSERT_CHUNK) {
        const chunk = ids.slice(start, start + INSERT_CHUNK);
        await trx.deleteFrom('event_deliveries').where('event_id', 'in', chunk).execute();
        await trx.deleteFrom('events').where('id', 'in', chunk).execute();
      }
      return ids.length;
    });
    removed += done;
    if (done < batch) return removed;
  }
}
