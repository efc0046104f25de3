import http2, { type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { HttpsClientLimits } from './client-limits.js';

/** How long a session told GOAWAY may take to flush it before its socket is destroyed (a peer that never reads). */
const GOAWAY_GRACE_MS = 1000;

/**
 * The timeouts of one HTTP/2 session, where Node has none that fit: `session.setTimeout` is reset by
 * any frame, so a client's PINGs (or a header block trickled in CONTINUATION frames) would keep a
 * session forever. A session without an open stream gets `headerTimeoutMs` for its first request and
 * `idleTimeoutMs` after each last stream closes, then GOAWAY and close; open streams are never cut
 * for it. A request whose body has not all arrived `requestTimeoutMs` after its headers is answered
 * by `onRequestTimeout` (a 408 when nothing was answered yet) and its stream closed.
 */
export function enforceHttp2Timeouts(
  session: ServerHttp2Session,
  limits: HttpsClientLimits,
  onRequestTimeout: (stream: ServerHttp2Stream) => void,
): void {
  let open = 0;
  let idle: NodeJS.Timeout | undefined;
  const closeIdle = () => {
    if (session.closed || session.destroyed) return;
    session.close();
    setTimeout(() => session.destroy(), GOAWAY_GRACE_MS).unref();
  };
  const waitIdle = (ms: number) => {
    idle = setTimeout(closeIdle, ms).unref();
  };
  waitIdle(limits.headerTimeoutMs);
  session.once('close', () => clearTimeout(idle));
  session.on('stream', (stream: ServerHttp2Stream) => {
    open++;
    clearTimeout(idle);
    const request = stream.endAfterHeaders
      ? undefined
      : setTimeout(() => {
          if (stream.destroyed || stream.closed) return;
          onRequestTimeout(stream);
          stream.close(http2.constants.NGHTTP2_NO_ERROR);
        }, limits.requestTimeoutMs).unref();
    // The request's body has all arrived once its readable side ends.
    stream.once('end', () => clearTimeout(request));
    stream.once('close', () => {
      clearTimeout(request);
      open--;
      if (open === 0 && !session.closed) waitIdle(limits.idleTimeoutMs);
    });
  });
}
