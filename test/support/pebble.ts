import {
  PEBBLE_TOOLS,
  type Pebble,
  type PebbleOptions,
  startPebble as startPebbleWith,
} from '../../src/dev-cluster/pebble.js';
import { ensureTools, type ToolPaths } from '../../src/dev-cluster/tools.js';

/**
 * Pebble for the tests (src/dev-cluster/pebble.ts runs it): its tools are built on first use, and a
 * machine that cannot build them skips the suites that need it, saying why.
 */
export type { Pebble, PebbleOptions };

let tools: Promise<ToolPaths> | undefined;
function pebbleTools(): Promise<ToolPaths> {
  tools ??= ensureTools(PEBBLE_TOOLS, (line) => process.stderr.write(`[pebble tools] ${line}\n`));
  return tools;
}

/**
 * Why Pebble cannot run here (no Go and no `EDGEWARD_TOOLS_DIR` with its tools, or the build
 * failed), for `describeUnless` (`describeUnless(await pebbleUnavailable(), ...)`); undefined when
 * it can. Builds the tools the first time (about 20 s). On CI that is a failure, not a skip.
 */
export async function pebbleUnavailable(): Promise<string | undefined> {
  try {
    await pebbleTools();
    return undefined;
  } catch (error) {
    const reason = `Pebble is not available: ${(error as Error).message.split('\n')[0]}`;
    if (process.env.CI) throw new Error(`the ACME tests cannot run on CI: ${reason}`, { cause: error });
    return reason;
  }
}

/** Pebble and pebble-challtestsrv on loopback, built first if need be. */
export async function startPebble(options: PebbleOptions): Promise<Pebble> {
  return startPebbleWith(await pebbleTools(), options);
}
