import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A folder laid out as the kubelet mounts a Secret: each file is a symlink `name -> ..data/name`,
 * `..data` a symlink to a version folder. An update writes a new version folder and swaps `..data`
 * atomically (rename of a new symlink over it), so the files' own paths never see a write.
 */
export class MountedSecret {
  readonly dir = mkdtempSync(join(tmpdir(), 'edgeward-secret-'));
  #version = 0;

  constructor(files: Record<string, string>) {
    this.#write(files);
    for (const name of Object.keys(files)) symlinkSync(join('..data', name), join(this.dir, name));
  }

  path(name: string): string {
    return join(this.dir, name);
  }

  /** What the kubelet does on an update: a new version folder, then an atomic swap of `..data`. */
  update(files: Record<string, string>): void {
    this.#write(files);
  }

  #write(files: Record<string, string>): void {
    const version = `..v${++this.#version}`;
    mkdirSync(join(this.dir, version));
    for (const [name, text] of Object.entries(files)) {
      writeFileSync(join(this.dir, version, name), text, { mode: 0o600 });
    }
    symlinkSync(version, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
