import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeUnavailableReason } from '../../src/dev-cluster/node/node.js';
import { NODE_TOOLS } from '../../src/dev-cluster/tool-versions.js';
import { missingTools } from '../../src/dev-cluster/tools.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
/**
 * The environment variable naming where the image suite (first group) builds the image, so the
 * node suite (second group) imports that build instead of packing the same image again.
 */
export const SHARED_IMAGE_DIR = 'EDGEWARD_TEST_IMAGE_DIR';

/**
 * The node's tools take about 20 minutes to build the first time. The node suite runs in the second
 * group: start their build now, in the background, so it overlaps the first group's suites; the
 * suite then waits on the build's lock. With a warm cache this does nothing.
 */
export default function setup() {
  if (nodeUnavailableReason()) return;
  // Set before the test workers start, so both suites' workers see it.
  const imageDir = mkdtempSync(join(tmpdir(), 'edgeward-run-image-'));
  process.env[SHARED_IMAGE_DIR] = join(imageDir, 'out');
  const removeImage = () => rmSync(imageDir, { recursive: true, force: true });
  const missing = process.env.EDGEWARD_TOOLS_DIR ? [] : missingTools(NODE_TOOLS);
  if (missing.length === 0) return removeImage;
  const logFile = join(tmpdir(), `edgeward-node-tools-${process.pid}.log`);
  process.stderr.write(`[node setup] building ${missing.join(', ')} in the background (log: ${logFile})\n`);
  const out = openSync(logFile, 'a');
  // A process group of its own, so the teardown stops the go compilers too.
  const build: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CLI, 'tools', '--node'], {
    stdio: ['ignore', out, out],
    detached: true,
  });
  return () => {
    if (build.exitCode === null && build.pid !== undefined) process.kill(-build.pid, 'SIGTERM');
    removeImage();
  };
}
