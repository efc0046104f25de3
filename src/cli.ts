#!/usr/bin/env node
import { runCli } from './cli/main.js';

runCli(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`edgeward: ${error instanceof Error ? error.message : String(error)}\n`);
    if (error instanceof Error && error.cause) process.stderr.write(`  caused by: ${String(error.cause)}\n`);
    process.exitCode = 1;
  },
);
