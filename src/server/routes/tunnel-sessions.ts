import type { FastifyInstance } from 'fastify';
import { emptyBody, idParams } from '../../schemas/common.js';
import { type TunnelSession, tunnelSession, tunnelSessionList } from '../../schemas/tunnel-sessions.js';
import { ApiError } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import { defineCollectionReads, type Row, requireRow } from './collection.js';

const TAG = 'Tunnel sessions';
const KIND = 'tunnel session';

/** A session was opened with either kind of agent credential; the id prefix says which collection. */
function credentialPath(credentialId: string): string {
  return credentialId.startsWith('sshcr_')
    ? `/ssh_credentials/${credentialId}`
    : `/credentials/${credentialId}`;
}

export function tunnelSessionToWire(row: Row<'tunnel_sessions'>, ctx: RequestContext): TunnelSession {
  return {
    id: row.id,
    uri: ctx.url(`/tunnel_sessions/${row.id}`),
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
  defineCollectionReads(app, {
    table: 'tunnel_sessions',
    path: '/tunnel_sessions',
    listKey: 'tunnel_sessions',
    kind: KIND,
    name: 'TunnelSession',
    plural: 'TunnelSessions',
    tag: TAG,
    item: tunnelSession,
    list: tunnelSessionList,
    toWire: tunnelSessionToWire,
    // Sessions end when their agent disconnects; the `stop` command is how a caller ends one.
    skipDelete: true,
  });
  for (const command of COMMANDS) {
    defineRoute(app, {
      method: 'POST',
      url: `/tunnel_sessions/:id/${command.name}`,
      operationId: command.operationId,
      summary: command.summary,
      tag: TAG,
      params: idParams,
      body: emptyBody,
      status: 204,
      handler: async ({ params, ctx }) => {
        await requireRow(ctx.db, 'tunnel_sessions', params.id, KIND);
        // There is no agent transport yet, so no command can reach an agent; a 204 would be a lie.
        throw new ApiError(
          'ERR_EDGEWARD_900',
          'id: the agent of this session is not connected to this server; commands cannot be delivered',
        );
      },
    });
  }
}
