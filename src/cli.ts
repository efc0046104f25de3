#!/usr/bin/env node
import { runCli } from './cli/main.js';

/** The oldest Node.js edgeward runs on (package.json's engines); npm only warns about engines. */
const MINIMUM_NODE = [22, 12] as const;

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < MINIMUM_NODE[0] || (major === MINIMUM_NODE[0] && minor < MINIMUM_NODE[1])) {
  process.stderr.write(
    `edgeward: Node.js ${MINIMUM_NODE.join('.')} or later is needed; this is ${process.version} (${process.execPath})\n`,
  );
  process.exitCode = 1;
} else {
  runCli(process.argv.slice(2)).then(
    (code) => {
      if (code !== undefined) process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`edgeward: ${error instanceof Error ? error.message : String(error)}\n`);
      if (error instanceof Error && error.cause)
        process.stderr.write(`  caused by: ${String(error.cause)}\n`);
      process.exitCode = 1;
    },
  );
}
