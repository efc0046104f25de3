import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import {
  EDGE_COMMAND_RESULT_ROUTE,
  EDGE_FEED_PATH,
  EDGE_FEED_QUERY,
  EDGE_SESSION_ROUTE,
  type EdgeFeedMessage,
  edgeCommandResult,
  edgeSessionReport,
} from '../../schemas/edge-config.js';
import { ApiError } from '../errors/api-error.js';
import { describeZodError } from '../errors/zod-issues.js';
import type { EdgeFeed } from './edge-feed.js';
import { edgeKeyMatches } from './edge-key.js';

declare module 'fastify' {
  interface FastifyInstance {
    edgeFeed: EdgeFeed;
  }
}

const EDGE_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** `host:port` as edges advertise it (`parseAdvertisedAddress`): a name, an IPv4 or a bracketed IPv6 address. */
const HOST_PORT = /^(?:\[[^\]\s]{2,100}\]|[^\s:/?#[\]@]{1,253}):\d{1,5}$/;
// Not strict: a newer edge's parameters must not cost it its feed (it says what it needs to be sent).
const feedQuery = z.object({
  edge_id: z.string().regex(EDGE_ID, 'must be 1 to 64 letters, digits, _ or -'),
  region: z.string().regex(/^[a-z]{2,16}$/, 'must be a region name such as us'),
  [EDGE_FEED_QUERY.peers]: z.literal('1').optional(),
  [EDGE_FEED_QUERY.tunnelAddr]: z.string().regex(HOST_PORT, 'must be host:port').optional(),
  [EDGE_FEED_QUERY.relayAddr]: z.string().regex(HOST_PORT, 'must be host:port').optional(),
});
const sessionParams = z.strictObject({
  edge_id: z.string().regex(EDGE_ID),
  session_id: z.string().regex(/^ts_[A-Za-z0-9]{1,60}$/, 'must be a tunnel session id'),
});
const commandParams = z.strictObject({ command_id: z.string().uuid() });

function parse<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError('ERR_EDGEWARD_100', describeZodError(result.error, ''));
  return result.data;
}

/** Routes for `edgeward edge` only: authenticated by the edge key, kept out of the public API document. */
function requireEdgeKey(edgeKey: string) {
  return async (request: FastifyRequest) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    if (!match?.[1] || !edgeKeyMatches(edgeKey, match[1])) {
      throw new ApiError('ERR_EDGEWARD_201', 'Authorization: the edge key is missing or wrong');
    }
  };
}

/**
 * `GET /edge/v1/feed?edge_id=&region=`: an NDJSON stream that starts with the whole configuration
 * and carries a new one after every committed change, agent commands, and a ping every 15 s. The
 * edge's sessions live as long as the stream (and its lease): `PUT`/`DELETE` report them.
 */
export const edgeFeedPlugin = fp(
  async (app: FastifyInstance, options: { edgeKey: string; feed: EdgeFeed }) => {
    const { feed } = options;
    app.decorate('edgeFeed', feed);
    const onRequest = requireEdgeKey(options.edgeKey);
    const config = { public: true };
    const openFeeds = new Set<() => void>();

    app.get(EDGE_FEED_PATH, { config, onRequest }, async (request, reply) => {
      const query = parse(feedQuery, request.query);
      reply.hijack();
      const raw = reply.raw;
      // `connection: close`: when the server ends the feed (shutdown), the socket goes with it
      // instead of idling on as keep-alive, which would hold the server's close open.
      raw.writeHead(200, {
        'content-type': 'application/x-ndjson',
        'cache-control': 'no-store',
        connection: 'close',
      });
      const send = (message: EdgeFeedMessage) => {
        if (!raw.destroyed) raw.write(`${JSON.stringify(message)}\n`);
      };
      const end = () => raw.end();
      openFeeds.add(end);
      let disconnect: (() => Promise<void>) | undefined;
      const onGone = () => {
        openFeeds.delete(end);
        disconnect?.().catch((error: unknown) =>
          request.log.error({ err: error, edgeId: query.edge_id }, 'forgetting a disconnected edge failed'),
        );
      };
      raw.once('close', onGone);
      try {
        disconnect = await feed.connect({
          edgeId: query.edge_id,
          region: query.region,
          peers: query.peers === '1',
          tunnelAddr: query.tunnel_addr ?? null,
          relayAddr: query.relay_addr ?? null,
          send,
        });
      } catch (error) {
        request.log.error({ err: error, edgeId: query.edge_id }, 'starting an edge feed failed');
        raw.destroy();
        return;
      }
      // The connection may have closed while the feed was starting.
      if (raw.destroyed) onGone();
    });

    app.put<{ Params: unknown; Body: unknown }>(
      EDGE_SESSION_ROUTE,
      { config, onRequest },
      async (request, reply) => {
        const params = parse(sessionParams, request.params);
        await feed.putSession(params.edge_id, params.session_id, parse(edgeSessionReport, request.body));
        return reply.code(204).send();
      },
    );
    app.delete<{ Params: unknown }>(EDGE_SESSION_ROUTE, { config, onRequest }, async (request, reply) => {
      const params = parse(sessionParams, request.params);
      await feed.deleteSession(params.edge_id, params.session_id);
      return reply.code(204).send();
    });
    app.post<{ Params: unknown; Body: unknown }>(
      EDGE_COMMAND_RESULT_ROUTE,
      { config, onRequest },
      async (request, reply) => {
        const params = parse(commandParams, request.params);
        feed.completeCommand(params.command_id, parse(edgeCommandResult, request.body));
        return reply.code(204).send();
      },
    );

    feed.start();
    // Feeds never end on their own: close them so the server's close does not wait on them.
    app.addHook('preClose', async () => {
      feed.close();
      for (const end of openFeeds) end();
    });
  },
);
