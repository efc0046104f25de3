import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { apiKeyFromFile } from './api-key-file.js';

/** A Secret volume as the kubelet writes it: `key -> ..data/key`, `..data -> ..<timestamp>/`. */
class SecretVolume {
  readonly dir = mkdtempSync(join(tmpdir(), 'edgeward-key-volume-'));
  #generation = 0;

  constructor(key: string) {
    this.write(key);
    symlinkSync('..data/api-key', join(this.dir, 'api-key'));
  }

  get path(): string {
    return join(this.dir, 'api-key');
  }

  /** Writes a new timestamped folder and swaps `..data` to it in one rename, as the kubelet does. */
  write(key: string): void {
    const folder = `..2026_11_26_${++this.#generation}`;
    mkdirSync(join(this.dir, folder));
    writeFileSync(join(this.dir, folder, 'api-key'), key);
    symlinkSync(folder, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

describe('the API key of a mounted Secret', () => {
  const volumes: SecretVolume[] = [];
  afterEach(() => {
    for (const volume of volumes.splice(0)) volume.remove();
  });

  it('is read again once it changes, at most every recheck interval', () => {
    const volume = new SecretVolume('ewk_first\n');
    volumes.push(volume);
    let now = 0;
    const key = apiKeyFromFile(volume.path, { recheckMs: 10_000, now: () => now });
    expect(key()).toBe('ewk_first');
    volume.write('ewk_second');
    now = 9_999;
    expect(key()).toBe('ewk_first');
    now = 10_000;
    expect(key()).toBe('ewk_second');
  });

  it('keeps the last good key, and says so, while the file is empty or gone', () => {
    const volume = new SecretVolume('ewk_first');
    volumes.push(volume);
    let now = 0;
    const errors: string[] = [];
    const key = apiKeyFromFile(volume.path, {
      recheckMs: 1,
      now: () => now,
      onError: (error) => errors.push(`${error.message}: ${(error.cause as Error).message}`),
    });
    volume.write('  \n');
    now = 5;
    expect(key()).toBe('ewk_first');
    expect(errors).toEqual([
      `re-reading the API key file ${volume.path}; keeping the last key: ${volume.path}: the API key file is empty`,
    ]);
    volume.write('ewk_third');
    now = 10;
    expect(key()).toBe('ewk_third');
  });

  it('must be readable at start', () => {
    expect(() => apiKeyFromFile(join(tmpdir(), 'edgeward-no-such-key-file'))).toThrow(/ENOENT/);
  });
});
