import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { renderAllCrdsYaml } from '../operator/crds/generate.js';
import { writeCrdFolder } from '../operator/crds/write.js';

const USAGE = `usage: edgeward crds [--write [--dir <folder>]]

Prints every edgeward CustomResourceDefinition as one multi-document YAML stream
(kubectl apply -f - takes it). With --write, rewrites the folder instead (default ./crds):
one <plural>.edgeward.dev.yaml per CRD and a Kustomization file listing them.
`;

export async function crdsCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      write: { type: 'boolean' },
      dir: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.dir !== undefined && !values.write) {
    process.stderr.write(`edgeward crds: --dir only applies with --write\n${USAGE}`);
    return 2;
  }
  if (!values.write) {
    process.stdout.write(renderAllCrdsYaml());
    return 0;
  }
  const dir = resolve(values.dir ?? 'crds');
  const written = await writeCrdFolder(dir);
  process.stderr.write(`crds: wrote ${written.length} files to ${dir}\n`);
  return 0;
}
