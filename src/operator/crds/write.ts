import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { API_GROUP } from './common.js';
import { type CustomResourceDefinition, crdFiles } from './generate.js';

/**
 * Rewrites a `crds/` folder: every generated file, and no CRD file the generator no longer makes
 * (a renamed or removed kind must not linger in the kustomization's folder). Returns the file names.
 */
export async function writeCrdFolder(dir: string, crds: CustomResourceDefinition[]): Promise<string[]> {
  const files = crdFiles(crds);
  await mkdir(dir, { recursive: true });
  const suffix = `.${API_GROUP}.yaml`;
  for (const existing of await readdir(dir)) {
    const stale = (existing.endsWith(suffix) || existing === 'kustomization.yaml') && !files.has(existing);
    if (stale) await rm(join(dir, existing));
  }
  for (const [name, text] of files) await writeFile(join(dir, name), text);
  return [...files.keys()];
}
