import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { admissionFiles } from '../operator/admission/finalizer-policy.js';
import { argocdFiles } from '../operator/argocd/health-customizations.js';
import { buildAllCrds, renderAllCrdsYaml } from '../operator/crds/generate.js';
import { writeCrdFolder } from '../operator/crds/write.js';
import { KIND_DEFINITIONS, OPERATOR_CONTROLLERS, OPERATOR_KINDS } from '../operator/kinds.js';
import { rbacFiles } from '../operator/rbac.js';

const USAGE = `usage: edgeward crds [--write [--dir <folder>]] [--write-rbac]

Prints every edgeward CustomResourceDefinition as one multi-document YAML stream
(kubectl apply -f - takes it). With --write, rewrites the folder instead (default ./crds):
one <plural>.edgeward.dev.yaml per CRD and a Kustomization file listing them.
With --write-rbac (in a checkout of the repository), rewrites the other files generated from the
same kinds: the operator's RBAC rules (config/rbac/role.yaml, charts/edgeward/templates/
_operator-rules.tpl), the Argo CD health checks (config/argocd/argocd-cm-patch.yaml) and the
finalizer admission policy (config/admission, the chart's files/admission).
`;

export async function crdsCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      write: { type: 'boolean' },
      dir: { type: 'string' },
      'write-rbac': { type: 'boolean' },
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
  if (values['write-rbac']) {
    for (const [path, text] of rbacFiles(OPERATOR_KINDS, OPERATOR_CONTROLLERS))
      await writeFile(resolve(path), text);
    for (const [path, text] of argocdFiles(KIND_DEFINITIONS)) await writeFile(resolve(path), text);
    for (const [path, text] of admissionFiles(OPERATOR_KINDS)) await writeFile(resolve(path), text);
    process.stderr.write(
      'crds: wrote the operator RBAC rules (config/rbac, the chart), the Argo CD health checks and the finalizer admission policy\n',
    );
    if (!values.write) return 0;
  }
  if (!values.write) {
    process.stdout.write(renderAllCrdsYaml(buildAllCrds(KIND_DEFINITIONS)));
    return 0;
  }
  const dir = resolve(values.dir ?? 'crds');
  const written = await writeCrdFolder(dir, buildAllCrds(KIND_DEFINITIONS));
  process.stderr.write(`crds: wrote ${written.length} files to ${dir}\n`);
  return 0;
}
