import { type ChildProcess, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeUnavailableReason } from '../../src/dev-cluster/node/node.js';
import { NODE_TOOLS } from '../../src/dev-cluster/tool-versions.js';
import { missingTools } from '../../src/dev-cluster/tools.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

/**
 * The node's tools take about 20 minutes to build the first time. The node suite runs in the second
 * group: start their build now, in the background, so it overlaps the first group's suites; the
 * suite then waits on the build's lock. With a warm cache this does nothing.
 */
export default function setup() {
  if (nodeUnavailableReason() || process.env.EDGEWARD_TOOLS_DIR) return;
  const missing = missingTools(NODE_TOOLS);
  if (missing.length === 0) return;
  const logFile = join(tmpdir(), `edgeward-node-tools-${process.pid}.log`);
  process.stderr.write(`[node setup] building ${missing.join(', ')} in the background (log: ${logFile})\n`);
  const out = openSync(logFile, 'a');
  const build: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CLI, 'tools', '--node'], {
    stdio: ['ignore', out, out],
  });
  return () => {
    if (build.exitCode === null) build.kill('SIGTERM');
  };
}
