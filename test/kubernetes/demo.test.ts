import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnCli } from '../support/cli-process.js';

/**
 * The quick start's first command, as a new user runs it (with --exit): it must carry a request
 * through an edge, first made through the API, then from Kubernetes objects the operator reconciles.
 */
describe('edgeward demo', () => {
  it('brings up the server and an edge, carries a request through the edge, then does it all again from the samples on a cluster', async () => {
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

      // The Kubernetes half: a control plane, the CRDs, the operator, config/samples/https-edge.yaml.
      expect(output).toContain('CRDs               18 kinds of edgeward.dev installed');
      for (const [kind, name, prefix, reason] of [
        ['TunnelCredential', 'web-https-agent', 'cr', 'Created'],
        ['IPPolicy', 'web-clients', 'ipp', 'Created'],
        ['HTTPSEdge', 'web', 'edghts', 'Created'],
        ['HTTPSEdgeRoute', 'web-root', 'edghtsrt', 'Created'],
        ['Tunnel', 'web-https', 'ts', 'Online'],
      ]) {
        expect(output).toMatch(new RegExp(`\\n  ${kind} +${name} +${prefix}_\\w+ +True \\(${reason}\\)\\n`));
      }
      expect(output).toMatch(
        /GET https:\/\/web\.example\.com:\d+\/from\/kubernetes .*\n {2}→ HTTP 200, x-served-by: edgeward: hello from the Service web \(it saw GET \/from\/kubernetes, x-edge-host: web\.example\.com\)/,
      );
      expect(output).toMatch(/kubectl get edgeward -n demo/);
      // --exit stopped everything it started: the control plane's state is gone with it.
      expect(existsSync(join(dataDir, 'cluster'))).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
