import { parseArgs } from 'node:util';
import { ALL_TOOLS } from '../dev-cluster/tool-versions.js';
import { ensureTools, regenerateKubernetesWrapper, toolsCacheDir } from '../dev-cluster/tools.js';

/** `edgeward tools [--regenerate]`: build (once) and print the paths of the Kubernetes test tools. */
export async function toolsCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { regenerate: { type: 'boolean' } }, strict: true });
  const log = (line: string) => process.stderr.write(`tools: ${line}\n`);
  if (values.regenerate) await regenerateKubernetesWrapper(log);
  log(`cache: ${toolsCacheDir()}`);
  const paths = await ensureTools(ALL_TOOLS, log);
  for (const [tool, path] of Object.entries(paths)) process.stdout.write(`${tool}\t${path}\n`);
  return 0;
}
