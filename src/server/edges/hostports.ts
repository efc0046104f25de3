import { badRequest, conflict } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';

/**
 * A hostport is served by one edge at a time. Claims are rows of `edge_hostports` (primary key
 * `hostport`), so two edges racing for the same hostport cannot both win, even across replicas.
 */
export async function claimHostports(
  ctx: RequestContext,
  edgeId: string,
  hostports: readonly string[],
  field = 'hostports',
): Promise<void> {
  const seen = new Map<string, number>();
  hostports.forEach((hostport, index) => {
    const first = seen.get(hostport);
    if (first !== undefined) {
      throw badRequest(`${field}[${index}]: '${hostport}' is listed twice (first at index ${first})`);
    }
    seen.set(hostport, index);
  });
  await releaseHostports(ctx, edgeId);
  if (hostports.length === 0) return;
  const taken = await ctx.db
    .selectFrom('edge_hostports')
    .selectAll()
    .where('hostport', 'in', [...hostports])
    .execute();
  const holder = taken[0];
  if (holder) {
    const index = hostports.indexOf(holder.hostport);
    throw conflict(`${field}[${index}]: '${holder.hostport}' is already served by edge ${holder.edge_id}`);
  }
  await ctx.db
    .insertInto('edge_hostports')
    .values(hostports.map((hostport) => ({ hostport, edge_id: edgeId })))
    .execute();
}

export async function releaseHostports(ctx: RequestContext, edgeId: string): Promise<void> {
  await ctx.db.deleteFrom('edge_hostports').where('edge_id', '=', edgeId).execute();
}
