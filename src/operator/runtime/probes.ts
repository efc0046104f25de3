import type { ListenAddress } from '../../lib/listen-address.js';
import { listen, type RunningServer } from './http-listener.js';

/** A named check; false (or a thrown error) fails it. */
export type Check = () => boolean | Promise<boolean>;

export interface ProbeChecks {
  /** `/healthz`: is the process working (restart it if not)? */
  liveness: Record<string, Check>;
  /** `/readyz`: should it count as available? */
  readiness: Record<string, Check>;
}

/** Runs checks; the body lists each as `[+]name ok` / `[-]name failed`, as kube-apiserver's do. */
export async function runChecks(checks: Record<string, Check>): Promise<{ ok: boolean; body: string }> {
  let ok = true;
  const lines: string[] = [];
  for (const [name, check] of Object.entries(checks)) {
    let passed = false;
    try {
      passed = await check();
    } catch {
      passed = false;
    }
    ok &&= passed;
    lines.push(`[${passed ? '+' : '-'}]${name} ${passed ? 'ok' : 'failed'}`);
  }
  lines.push(ok ? 'ok' : 'not ok');
  return { ok, body: `${lines.join('\n')}\n` };
}

/** Serves `GET /healthz` and `GET /readyz`: 200 when every check passes, 503 otherwise. */
export function startProbeServer(address: ListenAddress, checks: ProbeChecks): Promise<RunningServer> {
  return listen(address, async (request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const set = path === '/healthz' ? checks.liveness : path === '/readyz' ? checks.readiness : undefined;
    if (request.method !== 'GET' || !set) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    const result = await runChecks(set);
    response
      .writeHead(result.ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' })
      .end(result.body);
  });
}
