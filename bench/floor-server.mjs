// The stack's floor: bare Fastify answering edgeward's two IP policy reads straight from edgeward's
// own database, with the same JSON shapes, and nothing else: no authentication, version header,
// validation, operation id or error mapping. What edgeward's reads cost beyond this is edgeward's
// own; what this costs is Fastify's and the database driver's.
//   node bench/floor-server.mjs <path/to/edgeward.sqlite | postgres://…>
// SQLite: a query-only connection in WAL, as the server reads. PostgreSQL: a pg pool of the
// driver's default size, with named (prepared) statements.
import Fastify from 'fastify';

const BY_ID = 'select * from "ip_policies" where "id" = $1';
const NEWEST_FIRST = 'select * from "ip_policies" order by "id" desc limit $1';

/** `byId(id)` and `newestFirst(limit)`, each resolving with rows. */
async function openStore(location) {
  if (location.startsWith('postgres://') || location.startsWith('postgresql://')) {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: location });
    const rows = async (name, text, values) => (await pool.query({ name, text, values })).rows;
    return {
      byId: (id) => rows('floor_by_id', BY_ID, [id]),
      newestFirst: (limit) => rows('floor_newest_first', NEWEST_FIRST, [limit]),
    };
  }
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(location, { fileMustExist: true });
  db.pragma('journal_mode = WAL');
  db.pragma('query_only = ON');
  const byId = db.prepare(BY_ID.replace('$1', '?'));
  const newestFirst = db.prepare(NEWEST_FIRST.replace('$1', '?'));
  return { byId: async (id) => byId.all(id), newestFirst: async (limit) => newestFirst.all(limit) };
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

origin = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ listen: origin })}\n`);
