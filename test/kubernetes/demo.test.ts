import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnCli } from '../support/cli-process.js';

/** The quick start's first command, as a new user runs it: it must carry a request through an edge. */
describe('edgeward demo', () => {
  it('brings up the server and an edge, and carries a request through the edge to a local service', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'edgeward-demo-'));
    try {
      const demo = spawnCli(['demo', '--exit', '--data-dir', dataDir, '--port', '0']);
      const [code] = (await once(demo.child, 'exit')) as [number | null];
      const output = demo.output();
      expect(code, output).toBe(0);
      expect(output).toMatch(/agent online {7}session ts_\w+ \(svc\/2 from 127\.0\.0\.1\)/);
      expect(output).toMatch(
        /GET http:\/\/127\.0\.0\.1:(\d+)\/through\/the\/edge\n {2}→ hello from your local service \(it saw GET \/through\/the\/edge\)/,
      );
      // The HTTPS edge: a route with request and response headers on.
      expect(output).toMatch(
        /GET https:\/\/demo\.localhost:\d+\/through\/https\n {2}→ HTTP 200, x-served-by: edgeward: hello from your local service \(it saw GET \/through\/https, x-demo: added by the edge\)/,
      );
      expect(output).toContain('--edge-ca');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
