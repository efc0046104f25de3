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

/**
 * TLS and HTTPS edges may not serve names under the reserved TCP address domain: a hostport such as
 * `us.tcp.edgeward.dev:12345` is a reserved address, and claiming it would keep the TCP edge that
 * is meant to serve it from doing so.
 */
export async function refuseTcpAddrDomain(ctx: RequestContext, hostports: readonly string[]): Promise<void> {
  const domain = ctx.settings.tcpAddrDomain.toLowerCase();
  hostports.forEach((hostport, index) => {
    const host = hostOf(hostport).toLowerCase();
    if (host === domain || host.endsWith(`.${domain}`)) {
      throw badRequest(
        `hostports[${index}]: '${hostport}' is in the domain of reserved TCP addresses (${domain}); only TCP edges serve those`,
      );
    }
  });
}

function hostOf(hostport: string): string {
  const colon = hostport.lastIndexOf(':');
  return colon < 0 ? hostport : hostport.slice(0, colon);
}

/**
 * The public origin of an edge, `https://<host>` (`:<port>` unless 443), from its first hostport
 * with a concrete host: a wildcard (`*.example.com`) names many hosts and no URL. Undefined when the
 * edge has no such hostport.
 */
export function edgeOrigin(hostports: readonly string[]): string | undefined {
  const hostport = hostports.find((candidate) => !candidate.startsWith('*.'));
  if (hostport === undefined) return undefined;
  const host = hostOf(hostport);
  const port = hostport.slice(host.length + 1);
  return port === '443' || port === '' ? `https://${host}` : `https://${host}:${port}`;
}
