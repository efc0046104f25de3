import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The image config umoci writes (the OCI image spec's `config`). */
export interface OciConfig {
  entrypoint?: string[];
  cmd?: string[];
  env?: Record<string, string>;
  exposedPorts?: string[];
  volumes?: string[];
  user: string;
  workdir?: string;
}

export interface PackedImage {
  /** The OCI image layout (`<layout>:<tag>`). */
  layout: string;
  /** The same as one OCI archive: `ctr images import`, `kind load image-archive`. */
  archive: string;
}

const run = (command: string, args: string[]) =>
  execFileSync(command, args, { stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 });

/**
 * Packs a root filesystem as an OCI image layout with umoci, then as one archive whose index names
 * the image for containerd. `name` is a full reference (`docker.io/library/edgeward:0.1.0`); the
 * rootfs folder is moved into the image, so it is gone afterwards. Needs umoci (and root when the
 * rootfs holds files owned by others).
 */
export function packOciArchive(options: {
  rootfs: string;
  name: string;
  archive: string;
  config: OciConfig;
  /** Where the layout goes; a temporary folder beside the archive (removed) when not given. */
  layout?: string;
}): PackedImage {
  const tag = options.name.slice(options.name.lastIndexOf(':') + 1);
  const layout = options.layout ?? `${options.archive}.layout`;
  const keepLayout = options.layout !== undefined;
  const image = `${layout}:${tag}`;
  rmSync(layout, { recursive: true, force: true });
  mkdirSync(dirname(layout), { recursive: true });
  run('umoci', ['init', '--layout', layout]);
  run('umoci', ['new', '--image', image]);
  const bundle = `${layout}.bundle`;
  run('umoci', ['unpack', '--image', image, bundle]);
  rmSync(join(bundle, 'rootfs'), { recursive: true, force: true });
  run('mv', [options.rootfs, join(bundle, 'rootfs')]);
  run('umoci', ['repack', '--image', image, bundle]);
  const { config } = options;
  run('umoci', [
    'config',
    '--image',
    image,
    ...(config.entrypoint ?? []).flatMap((arg) => ['--config.entrypoint', arg]),
    ...(config.cmd ?? []).flatMap((arg) => ['--config.cmd', arg]),
    ...Object.entries(config.env ?? {}).flatMap(([name, value]) => ['--config.env', `${name}=${value}`]),
    ...(config.exposedPorts ?? []).flatMap((port) => [
      '--config.exposedports',
      port.includes('/') ? port : `${port}/tcp`,
    ]),
    ...(config.volumes ?? []).flatMap((volume) => ['--config.volume', volume]),
    '--config.user',
    config.user,
    ...(config.workdir ? ['--config.workingdir', config.workdir] : []),
  ]);
  run('umoci', ['gc', '--layout', layout]);
  rmSync(bundle, { recursive: true, force: true });
  nameForContainerd(layout, tag, options.name);
  rmSync(options.archive, { force: true });
  run('tar', ['-C', layout, '-cf', options.archive, '.']);
  if (!keepLayout) rmSync(layout, { recursive: true, force: true });
  return { layout, archive: options.archive };
}

/**
 * containerd names an image it imports from an OCI archive by the index's
 * `io.containerd.image.name` annotation; umoci sets only the tag (`org.opencontainers.image.ref.name`).
 */
function nameForContainerd(layout: string, tag: string, name: string): void {
  const indexFile = join(layout, 'index.json');
  const index = JSON.parse(readFileSync(indexFile, 'utf8')) as {
    manifests: Array<{ annotations?: Record<string, string> }>;
  };
  const tagged = index.manifests.find(
    (manifest) => manifest.annotations?.['org.opencontainers.image.ref.name'] === tag,
  );
  if (!tagged) throw new Error(`${indexFile} has no manifest tagged ${tag}`);
  tagged.annotations = { ...tagged.annotations, 'io.containerd.image.name': name };
  writeFileSync(indexFile, JSON.stringify(index));
}

/** The names an OCI archive's index gives its images, as containerd reads them at import. */
export function ociArchiveImageNames(archive: string): string[] {
  // tar stores the index as ./index.json or index.json, depending on how it was packed.
  const read = (member: string) => spawnSync('tar', ['-xOf', archive, member], { encoding: 'utf8' });
  const dotted = read('./index.json');
  const text = dotted.status === 0 ? dotted.stdout : read('index.json').stdout;
  let index: { manifests?: Array<{ annotations?: Record<string, string> }> };
  try {
    index = JSON.parse(text) as typeof index;
  } catch (error) {
    throw new Error(`${archive} is no OCI archive (no readable index.json)`, { cause: error });
  }
  return (index.manifests ?? []).flatMap((manifest) => {
    const name = manifest.annotations?.['io.containerd.image.name'];
    return name ? [name] : [];
  });
}
