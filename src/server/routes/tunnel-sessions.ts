import type { FastifyInstance } from 'fastify';
import { emptyBody, idParams } from '../../schemas/common.js';
import { isIdOf } from '../../schemas/id-prefixes.js';
import { type TunnelSession, tunnelSession, tunnelSessionList } from '../../schemas/tunnel-sessions.js';
import { ApiError } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import type { Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCollectionReads } from './collection-reads.js';

/** Sessions are opened by agents, not through the API, so they have no create, update or events. */
const TUNNEL_SESSIONS = defineCollection({
  table: 'tunnel_sessions',
  path: '/tunnel_sessions',
  kind: 'tunnel session',
  name: 'TunnelSession',
  plural: 'TunnelSessions',
  tag: 'Tunnel sessions',
  listKey: 'tunnel_sessions',
  item: tunnelSession,
  list: tunnelSessionList,
  toWire: tunnelSessionToWire,
});

/** A session was opened with either kind of agent credential; the id prefix says which collection. */
function credentialPath(credentialId: string): string {
  return isIdOf('/ssh_credentials', credentialId)
    ? `/ssh_credentials/${credentialId}`
    : `/credentials/${credentialId}`;
}

export function tunnelSessionToWire(row: Row<'tunnel_sessions'>, ctx: RequestContext): TunnelSession {
  return {
    id: row.id,
    uri: ctx.url(`${TUNNEL_SESSIONS.path}/${row.id}`),
    agent_version: row.agent_version,
    credential: { id: row.credential_id, uri: ctx.url(credentialPath(row.credential_id)) },
    ip: row.ip,
    // The spec's examples leave `metadata` out when the agent configuration has none.
    ...(row.metadata === null ? {} : { metadata: row.metadata }),
    os: row.os,
    region: row.region,
    started_at: row.started_at,
    transport: row.transport,
  };
}

const COMMANDS = [
  { name: 'restart', operationId: 'restartTunnelSession', summary: 'Restart the agent of a tunnel session' },
  { name: 'stop', operationId: 'stopTunnelSession', summary: 'Stop the agent of a tunnel session' },
  {
    name: 'update',
    operationId: 'updateTunnelSession',
    summary: 'Update the agent of a tunnel session within its major version',
  },
] as const;

export async function tunnelSessionRoutes(app: FastifyInstance): Promise<void> {
  defineCollectionReads(app, TUNNEL_SESSIONS, {
    // Sessions end when their agent disconnects; the `stop` command is how a caller ends one.
    skipDelete: true,
  });
  for (const command of COMMANDS) {
    defineRoute(app, {
      method: 'POST',
      url: `${TUNNEL_SESSIONS.path}/:id/${command.name}`,
      operationId: command.operationId,
      summary: command.summary,
      tag: TUNNEL_SESSIONS.tag,
      params: idParams,
      body: emptyBody,
      status: 204,
      // Before any transaction: the agent's answer can take seconds, and a command writes nothing.
      prepare: async ({ params }) => {
        if (!isIdOf(TUNNEL_SESSIONS.path, params.id)) {
          throw new ApiError('ERR_EDGEWARD_400', `id: tunnel session ${params.id} not found`);
        }
        await app.edgeFeed.sendCommand(params.id, command.name);
      },
      handler: async ({ ctx }) => {
        ctx.markUnchanged();
        return undefined;
      },
    });
  }
}
