import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KIND_DEFINITIONS } from '../kinds.js';
import { buildAllCrds, crdFiles, renderAllCrdsYaml } from './generate.js';
import type { JsonSchemaProps } from './to-openapi.js';

const CRDS_DIR = join(import.meta.dirname, '../../../crds');

/** The 18 kinds the operator serves (API group edgeward.dev, v1alpha1). */
const DESIGN_KINDS = [
  'AgentIngress',
  'SSHCertificateAuthority',
  'SSHHostCertificate',
  'SSHUserCertificate',
  'SSHCredential',
  'TunnelCredential',
  'Tunnel',
  'TLSEdge',
  'HTTPSEdge',
  'HTTPSEdgeRoute',
  'TCPEdge',
  'IPPolicy',
  'ReservedAddress',
  'BotUser',
  'CertificateAuthority',
  'TLSCertificate',
  'EventSubscription',
  'EventDestination',
];

/** Kinds without a server resource of their own (nothing to delete or orphan): no deletionPolicy. */
const UNMANAGED_KINDS = new Set(['Tunnel']);

/** Every schema node, with its path, for checks that must hold everywhere. */
function* nodes(schema: JsonSchemaProps, path = ''): Generator<[string, JsonSchemaProps]> {
  yield [path, schema];
  for (const [name, child] of Object.entries(schema.properties ?? {})) yield* nodes(child, `${path}.${name}`);
  if (schema.items) yield* nodes(schema.items, `${path}[]`);
  if (schema.additionalProperties) yield* nodes(schema.additionalProperties, `${path}[*]`);
}

describe('the generated CRDs', () => {
  const crds = buildAllCrds(KIND_DEFINITIONS);

  it('match the checked-in crds/ folder byte for byte', async () => {
    const expected = crdFiles(crds);
    const present = (await readdir(CRDS_DIR)).sort();
    expect(present, 'the crds/ folder is stale: run `npm run crds`').toEqual([...expected.keys()].sort());
    for (const [name, text] of expected) {
      const onDisk = await readFile(join(CRDS_DIR, name), 'utf8');
      expect(onDisk === text, `crds/${name} is stale: run \`npm run crds\``).toBe(true);
    }
  });

  it('are the 18 kinds of the design, each once', () => {
    expect(crds.map((crd) => crd.spec.names.kind).sort()).toEqual([...DESIGN_KINDS].sort());
    const shortNames = crds.flatMap((crd) => crd.spec.names.shortNames);
    expect(new Set(shortNames).size).toBe(shortNames.length);
  });

  it.each(buildAllCrds(KIND_DEFINITIONS).map((crd) => [crd.spec.names.kind, crd] as const))(
    '%s: group edgeward.dev, v1alpha1, namespaced, category edgeward, a short name, status subresource, columns',
    (kind, crd) => {
      expect(crd.metadata.name).toBe(`${crd.spec.names.plural}.edgeward.dev`);
      expect(crd.spec.group).toBe('edgeward.dev');
      expect(crd.spec.scope).toBe('Namespaced');
      expect(crd.spec.names.singular).toBe(kind.toLowerCase());
      expect(crd.spec.names.categories).toEqual(['edgeward']);
      expect(crd.spec.names.shortNames.length).toBeGreaterThan(0);
      expect(crd.spec.versions).toHaveLength(1);
      const [version] = crd.spec.versions;
      expect(version?.name).toBe('v1alpha1');
      expect(version?.served && version.storage).toBe(true);
      expect(version?.subresources).toEqual({ status: {} });

      const columns = version?.additionalPrinterColumns ?? [];
      const byName = new Map(columns.map((column) => [column.name.toUpperCase(), column]));
      expect(byName.get('ID')).toMatchObject({ type: 'string', jsonPath: '.status.id' });
      expect(byName.get('READY')).toMatchObject({
        jsonPath: '.status.conditions[?(@.type=="Ready")].status',
      });
      expect(byName.get('REASON')).toMatchObject({
        jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      });
      expect(byName.get('AGE')).toMatchObject({ type: 'date', jsonPath: '.metadata.creationTimestamp' });
      expect(columns.at(-1)?.name.toUpperCase()).toBe('AGE');

      const root = version!.schema.openAPIV3Schema;
      const spec = root.properties?.spec;
      const status = root.properties?.status;
      if (UNMANAGED_KINDS.has(kind)) {
        expect(spec?.properties?.deletionPolicy).toBeUndefined();
      } else {
        expect(spec?.properties?.deletionPolicy).toMatchObject({
          enum: ['Delete', 'Orphan'],
          default: 'Delete',
        });
      }
      expect(Object.keys(status?.properties ?? {})).toEqual(
        expect.arrayContaining(['id', 'uri', 'observedGeneration', 'conditions']),
      );
      expect(status?.properties?.conditions?.['x-kubernetes-list-map-keys']).toEqual(['type']);
      // A spec that needs nothing may be omitted (defaulting to {}); one that needs fields, or one
      // of two forms (TLSCertificate: inline or from a Secret), is required and has no default.
      const needed =
        (spec?.required?.length ?? 0) > 0 || KIND_DEFINITIONS.some((d) => d.kind === kind && d.specRequired);
      expect(root.required?.includes('spec') ?? false).toBe(needed);
      expect(spec?.default).toEqual(needed ? undefined : {});
      if (kind === 'TLSCertificate') expect(needed).toBe(true);
    },
  );

  it('are structural: every node typed (or preserving unknown fields), no forbidden keywords', () => {
    for (const crd of crds) {
      const root = crd.spec.versions[0]!.schema.openAPIV3Schema;
      for (const [path, node] of nodes(root)) {
        const where = `${crd.spec.names.kind}${path}`;
        expect(node.type !== undefined || node['x-kubernetes-preserve-unknown-fields'] === true, where).toBe(
          true,
        );
        for (const forbidden of [
          '$ref',
          '$schema',
          'anyOf',
          'oneOf',
          'allOf',
          'not',
          'const',
          'propertyNames',
        ]) {
          expect(Object.keys(node), where).not.toContain(forbidden);
        }
        if (node.type === 'integer') expect(['int32', 'int64'], where).toContain(node.format);
        if (node.properties && node.additionalProperties)
          expect.fail(`${where}: properties and additionalProperties`);
      }
    }
  });

  it('bound every list, map and string of a spec', () => {
    // The apiserver estimates the cost of CEL rules from these bounds (and refuses a CRD whose rules
    // could cost too much); they also keep objects far below etcd's size limit.
    for (const crd of crds) {
      const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
      for (const [path, node] of nodes(spec)) {
        const where = `${crd.spec.names.kind}.spec${path}`;
        if (node.type === 'array') expect(node.maxItems, where).toBeDefined();
        if (node.type === 'string' && node.enum === undefined) expect(node.maxLength, where).toBeDefined();
        if (node.additionalProperties) expect(node.maxProperties, where).toBeDefined();
      }
    }
  });

  it('keep each CRD small enough for client-side kubectl apply (its last-applied annotation is capped at 256 KiB)', () => {
    for (const [name, text] of crdFiles(crds)) expect(Buffer.byteLength(text), name).toBeLessThan(200 * 1024);
  });

  it('render as one multi-document YAML stream for `edgeward crds`', () => {
    const documents = parseAllDocuments(renderAllCrdsYaml(crds));
    if (!Array.isArray(documents)) expect.fail('not a multi-document stream');
    expect(documents.map((document) => document.errors)).toEqual(documents.map(() => []));
    expect(documents.map((document) => document.toJS())).toEqual(JSON.parse(JSON.stringify(crds)));
  });

  it('write a kustomization listing every CRD file', () => {
    const files = crdFiles(crds);
    const kustomization = parseAllDocuments(files.get('Kustomization') ?? '');
    if (!Array.isArray(kustomization)) expect.fail('Kustomization does not parse');
    expect(kustomization[0]?.toJS()).toEqual({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: crds.map((crd) => `${crd.metadata.name}.yaml`),
    });
  });
});
