import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { defineCommand, UsageError } from './command.js';

export const crdsCommand = defineCommand({
  name: 'crds',
  summary: "print (or write) the operator's CustomResourceDefinitions",
  usage: '[--write [--dir DIR]] [--write-rbac]',
  description: `Prints every edgeward CustomResourceDefinition as one multi-document YAML stream
(kubectl apply -f - takes it). With --write, rewrites a folder instead: one
<plural>.edgeward.dev.yaml per CRD and a Kustomization file listing them.
With --write-rbac (in a checkout of the repository), rewrites the other files generated from the
same kinds: the operator's RBAC rules (config/rbac/role.yaml, charts/edgeward/templates/
_operator-rules.tpl), the Argo CD health checks (config/argocd/argocd-cm-patch.yaml) and the
finalizer admission policy (config/admission, the chart's files/admission).`,
  flags: {
    write: { type: 'boolean', help: 'write the CRDs into a folder instead of printing them' },
    dir: { type: 'string', value: 'DIR', defaultText: './crds', help: 'the folder --write writes' },
    'write-rbac': {
      type: 'boolean',
      help: 'rewrite the RBAC rules, Argo CD health checks and admission policy',
    },
  },
  run: async (values) => {
    if (values.dir !== undefined && !values.write) throw new UsageError('--dir: only applies with --write');
    const { buildAllCrds, renderAllCrdsYaml } = await import('../operator/crds/generate.js');
    const { KIND_DEFINITIONS, OPERATOR_CONTROLLERS, OPERATOR_KINDS } = await import('../operator/kinds.js');
    if (values['write-rbac']) {
      const { admissionFiles } = await import('../operator/admission/finalizer-policy.js');
      const { argocdFiles } = await import('../operator/argocd/health-customizations.js');
      const { rbacFiles } = await import('../operator/rbac.js');
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
    const { writeCrdFolder } = await import('../operator/crds/write.js');
    const dir = resolve(values.dir ?? 'crds');
    const written = await writeCrdFolder(dir, buildAllCrds(KIND_DEFINITIONS));
    process.stderr.write(`crds: wrote ${written.length} files to ${dir}\n`);
    return 0;
  },
});
