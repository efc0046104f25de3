// The stack's floor: bare Fastify answering edgeward's IP policy requests straight from the
// database with the driver alone, with the same JSON shapes, and nothing else: no authentication,
// version header, validation, operation id, account event or error mapping. What edgeward costs
// beyond this is edgeward's own; what this costs is Fastify's and the database driver's.
//   node bench/floor-server.mjs <path/to/edgeward.sqlite | postgres://…>
// Reads come from edgeward's own rows. SQLite: a query-only connection in WAL, as the server reads.
// PostgreSQL: a pg pool of the driver's default size, with named (prepared) statements.
// Creates go to a table of the floor's own, one INSERT per request in its own durable commit, the
// obvious way (SQLite: floor.sqlite beside edgeward's file, WAL, synchronous=FULL; PostgreSQL:
// floor_ip_policies in the same database, synchronous_commit on).
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import Fastify from 'fastify';

const BY_ID = 'select * from "ip_policies" where "id" = $1';
const NEWEST_FIRST = 'select * from "ip_policies" order by "id" desc limit $1';
const INSERT =
  'insert into "floor_ip_policies" ("id", "created_at", "description", "metadata") values ($1, $2, $3, $4)';

/** `byId(id)` and `newestFirst(limit)` resolving with rows; `insert(row)` resolving once durable. */
async function openStore(location) {
  if (location.startsWith('postgres://') || location.startsWith('postgresql://')) {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: location });
    await pool.query('create table if not exists "floor_ip_policies" (like "ip_policies" including all)');
    const rows = async (name, text, values) => (await pool.query({ name, text, values })).rows;
    return {
      byId: (id) => rows('floor_by_id', BY_ID, [id]),
      newestFirst: (limit) => rows('floor_newest_first', NEWEST_FIRST, [limit]),
      insert: (row) => rows('floor_insert', INSERT, Object.values(row)),
    };
  }
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(location, { fileMustExist: true });
  db.pragma('journal_mode = WAL');
  db.pragma('query_only = ON');
  const byId = db.prepare(BY_ID.replace('$1', '?'));
  const newestFirst = db.prepare(NEWEST_FIRST.replace('$1', '?'));
  const writes = new Database(join(dirname(location), 'floor.sqlite'));
  writes.pragma('journal_mode = WAL');
  writes.pragma('synchronous = FULL');
  const { sql } = db.prepare(`select sql from sqlite_master where name = 'ip_policies'`).get();
  writes.exec(sql.replace('CREATE TABLE "ip_policies"', 'CREATE TABLE IF NOT EXISTS "floor_ip_policies"'));
  const insert = writes.prepare(INSERT.replace(/\$\d/g, '?'));
  return {
    byId: async (id) => byId.all(id),
    newestFirst: async (limit) => newestFirst.all(limit),
    insert: async (row) => insert.run(Object.values(row)),
  };
}

const store = await openStore(process.argv[2]);
const app = Fastify({ logger: false });
let origin = ''; // set once listening, before any request
const withUri = (row) => ({ ...row, uri: `${origin}/ip_policies/${row.id}` });

app.get('/ip_policies/:id', async (request, reply) => {
  const [row] = await store.byId(request.params.id);
  if (!row) return reply.code(404).send({ msg: 'not found' });
  return withUri(row);
});
app.get('/ip_policies', async (request) => {
  const limit = Number(request.query.limit ?? 100);
  const rows = await store.newestFirst(limit + 1);
  const page = rows.slice(0, limit);
  return {
    ip_policies: page.map(withUri),
    uri: `${origin}/ip_policies`,
    next_page_uri:
      rows.length > limit ? `${origin}/ip_policies?limit=${limit}&before_id=${page.at(-1).id}` : null,
  };
});

app.post('/ip_policies', async (request, reply) => {
  const row = {
    id: `ipp_${randomBytes(20).toString('base64url').slice(0, 27)}`,
    created_at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    description: request.body?.description ?? '',
    metadata: request.body?.metadata ?? '',
  };
  await store.insert(row);
  return reply.code(201).send(withUri(row));
});

origin = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ listen: origin })}\n`);
