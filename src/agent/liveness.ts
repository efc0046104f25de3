import type { ServerHttp2Session } from 'node:http2';
import { SESSION_LIVENESS, type SessionLivenessSettings } from '../schemas/tunnel-protocol.js';

/**
 * The agent's side of session liveness: pings the edge over the tunnel's HTTP/2 session every
 * `intervalMs`, and calls `onDead` once it has heard nothing from the edge (no ping answered, no
 * byte) for `intervalMs + timeoutMs` (noticed within half the shorter of the two after that). The agent then drops the connection and reconnects, instead
 * of waiting forever on an edge that froze or a path that silently lost the connection (TCP alone
 * would notice neither while the agent has nothing to send). Stops by itself when the session
 * closes; the returned function stops it sooner.
 */
export function watchEdgeLiveness(
  session: ServerHttp2Session,
  onDead: (reason: string) => void,
  settings: Partial<SessionLivenessSettings> = {},
): () => void {
  const { intervalMs, timeoutMs } = { ...SESSION_LIVENESS, ...settings };
  let heardAt = Date.now();
  let bytesRead = 0;
  bytesRead = received();
  let pingInFlight = false;
  let stopped = false;

  function received(): number {
    // The socket is unbound once the session is destroyed; the last count stands.
    return session.destroyed ? bytesRead : session.socket.bytesRead;
  }

  function ping(): void {
    if (pingInFlight || session.destroyed) return;
    try {
      pingInFlight = session.ping((error) => {
        pingInFlight = false;
        // A cancelled ping means the session is closing, which ends this watch too.
        if (!error) heardAt = Date.now();
      });
    } catch {
      // The session is closing between two checks: its close ends this watch.
    }
  }

  function check(): void {
    if (stopped) return;
    const now = received();
    if (now !== bytesRead) {
      bytesRead = now;
      heardAt = Date.now();
    }
    const silentMs = Date.now() - heardAt;
    if (silentMs < intervalMs + timeoutMs) return;
    stop();
    onDead(`the edge answered nothing for ${Math.round(silentMs / 100) / 10} s`);
  }

  const pingTimer = setInterval(ping, intervalMs);
  pingTimer.unref();
  // Judged after the event loop has read what arrived meanwhile: after a stall of this process
  // (a suspended laptop resuming), the edge's bytes are in the socket, not yet counted.
  const checkTimer = setInterval(() => setImmediate(check), Math.max(1, Math.min(intervalMs, timeoutMs) / 2));
  checkTimer.unref();

  function stop(): void {
    stopped = true;
    clearInterval(pingTimer);
    clearInterval(checkTimer);
  }
  session.once('close', stop);
  return stop;
}
