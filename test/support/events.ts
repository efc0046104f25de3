import type { Database } from '../../src/server/store/tables.js';
import type { TestServer } from './server.js';

/** The outbox rows recorded for one object, oldest first (`payload` is the stored JSON text). */
export async function eventsOf(t: TestServer, objectId: string): Promise<Database['events'][]> {
  return t.server.app.edgeward.db
    .selectFrom('events')
    .selectAll()
    .where('object_id', '=', objectId)
    .orderBy('id')
    .execute();
}

/** Event types recorded for one object, oldest first. */
export async function eventTypesOf(t: TestServer, objectId: string): Promise<string[]> {
  return (await eventsOf(t, objectId)).map((row) => row.type);
}
