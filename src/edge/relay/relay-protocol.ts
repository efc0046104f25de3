/**
 * Edge to edge: `POST /edgeward/relay` on the relay connection carries one public connection to a
 * session the answering edge holds. The request names the session and the public client; the
 * answer is 200 (then both directions are the stream's data, as on an agent stream), 404 when the
 * edge holds no such session (any more), 502 when its agent could not reach the target, 503 when
 * the session is draining. A relayed connection is never relayed again.
 */
export const RELAY_PATH = '/edgeward/relay';
export const RelayHeader = {
  sessionId: 'edgeward-session-id',
  sourceIp: 'edgeward-source-ip',
  sourcePort: 'edgeward-source-port',
} as const;
