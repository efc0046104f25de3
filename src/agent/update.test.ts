import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseSemVer, pickUpdate, UpdateRefused, Updater } from './update.js';

const tgz = (...versions: string[]) => versions.map((version) => `edgeward-${version}.tgz`);

describe('parseSemVer', () => {
  it.each([
    ['1.2.3', { major: 1, minor: 2, patch: 3, prerelease: undefined }],
    ['0.1.0-rc.1', { major: 0, minor: 1, patch: 0, prerelease: 'rc.1' }],
    ['10.20.30+build.5', { major: 10, minor: 20, patch: 30, prerelease: undefined }],
  ])('%s', (text, version) => {
    expect(parseSemVer(text)).toEqual(version);
  });

  it.each(['1.2', 'v1.2.3', '01.2.3', '1.2.3-', '1.2.3.4', ''])('refuses %j', (text) => {
    expect(parseSemVer(text)).toBeUndefined();
  });
});

describe('pickUpdate (which packed release an update installs)', () => {
  it.each([
    ['the highest newer release of the same major', '1.2.3', tgz('1.2.4', '1.10.0', '1.3.0'), '1.10.0'],
    ['compares numerically, not as text', '1.9.0', tgz('1.10.0', '1.9.1'), '1.10.0'],
    ['never a new major version', '1.2.3', tgz('2.0.0', '3.1.0', '1.2.5'), '1.2.5'],
    ['a major-only newer version is no update', '1.2.3', tgz('2.0.0'), undefined],
    ['never an older major either', '2.0.0', tgz('1.99.99'), undefined],
    ['the same version is not newer', '1.2.3', tgz('1.2.3'), undefined],
    ['older releases are not updates', '1.2.3', tgz('1.2.2', '1.1.9', '0.9.0'), undefined],
    ['pre-releases are ignored', '1.2.3', tgz('1.3.0-rc.1', '1.2.4-beta'), undefined],
    ['pre-releases ignored beside releases', '1.2.3', tgz('1.4.0-rc.1', '1.3.0'), '1.3.0'],
    ['a release is newer than its own pre-release', '1.3.0-rc.1', tgz('1.3.0'), '1.3.0'],
    ['a running pre-release is not replaced by an older release', '1.3.0-rc.1', tgz('1.2.9'), undefined],
    ['0.x updates within major 0', '0.1.0', tgz('0.2.0', '0.1.5', '1.0.0'), '0.2.0'],
    [
      'other files are ignored',
      '1.0.0',
      ['README', 'edgeward-1.1.tgz', 'other-1.2.0.tgz', 'x.tgz'],
      undefined,
    ],
    ['build metadata names are ignored', '1.0.0', tgz('1.0.1+build.7'), undefined],
    ['an empty directory has no update', '1.0.0', [], undefined],
    ['an unparsable running version never updates', 'dev', tgz('1.0.0'), undefined],
  ])('%s', (_name, current, files, expected) => {
    const pick = pickUpdate(current, files);
    expect(pick?.version).toBe(expected);
    if (expected) expect(pick?.file).toBe(`edgeward-${expected}.tgz`);
  });
});

describe('Updater (idle → updating → updated)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** An update dir with empty `.tgz` files (the fake extract writes the package). */
  function updateDir(...versions: string[]): string {
    const parent = mkdtempSync(join(tmpdir(), 'edgeward-updater-'));
    dirs.push(parent);
    const dir = join(parent, 'releases');
    mkdirSync(dir);
    for (const file of tgz(...versions)) writeFileSync(join(dir, file), '');
    return dir;
  }

  /** An extract the test releases by hand; writes `package/package.json` of `version`. */
  function gatedExtract(version: string, withCli = false) {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const calls: string[] = [];
    const extract = async (file: string, into: string) => {
      calls.push(file);
      await gate;
      mkdirSync(join(into, 'package', 'dist'), { recursive: true });
      writeFileSync(join(into, 'package', 'package.json'), JSON.stringify({ name: 'edgeward', version }));
      if (withCli) writeFileSync(join(into, 'package', 'dist', 'cli.js'), '');
    };
    return { extract, release, calls };
  }

  it('stages the release, refusing a second update while updating and after', async () => {
    const dir = updateDir('1.2.4', '1.3.0', '2.0.0');
    const gated = gatedExtract('1.3.0', true);
    const updater = new Updater({ currentVersion: '1.2.3', dir, extract: gated.extract });
    expect(updater.state).toEqual({ state: 'idle' });

    const { version, done } = await updater.begin();
    expect(version).toBe('1.3.0');
    expect(updater.state).toEqual({ state: 'updating', version: '1.3.0' });
    await expect(updater.begin()).rejects.toThrow(new UpdateRefused('the agent is already updating'));

    gated.release();
    const staged = await done;
    expect(gated.calls).toEqual([join(dir, 'edgeward-1.3.0.tgz')]);
    expect(staged).toEqual({
      version: '1.3.0',
      dir: join(`${dir}.staged`, '1.3.0', 'package'),
      cli: join(`${dir}.staged`, '1.3.0', 'package', 'dist', 'cli.js'),
    });
    expect(updater.state).toEqual({ state: 'updated', staged });
    expect(updater.staged).toEqual(staged);
    // The release resolves its dependencies from the running installation's node_modules.
    expect(readlinkSync(join(staged.dir, 'node_modules'))).toMatch(/node_modules$/);
    await expect(updater.begin()).rejects.toThrow('already updated to 1.3.0, restart to run it');
  });

  it('refuses when update checks are disabled, before looking for updates', async () => {
    const updater = new Updater({ currentVersion: '1.2.3', dir: updateDir('1.3.0'), enabled: false });
    await expect(updater.begin()).rejects.toThrow(
      new UpdateRefused('update checks are disabled by the agent configuration'),
    );
    expect(updater.state).toEqual({ state: 'idle' });
  });

  it.each([
    ['no update directory', undefined],
    ['a directory that does not exist', '/nonexistent/edgeward-releases'],
  ])('has no update available with %s', async (_name, dir) => {
    const updater = new Updater({ currentVersion: '1.2.3', dir });
    await expect(updater.begin()).rejects.toThrow(new UpdateRefused('no update available'));
    expect(updater.state).toEqual({ state: 'idle' });
  });

  it('has no update available when only a new major version is there', async () => {
    const updater = new Updater({ currentVersion: '1.2.3', dir: updateDir('2.0.0', '1.2.3') });
    await expect(updater.begin()).rejects.toThrow('no update available');
  });

  it('goes back to idle when the archive holds another version, so a later update can run', async () => {
    const dir = updateDir('1.3.0');
    const mislabeled = gatedExtract('9.9.9');
    mislabeled.release();
    const updater = new Updater({ currentVersion: '1.2.3', dir, extract: mislabeled.extract });
    const { done } = await updater.begin();
    await expect(done).rejects.toThrow('edgeward-1.3.0.tgz holds version 9.9.9, not 1.3.0: not staged');
    expect(updater.state).toEqual({ state: 'idle' });
    expect(updater.staged).toBeUndefined();
  });

  it('extracts a real npm-style tarball with the tar CLI (no CLI entry point in it)', async () => {
    const dir = updateDir();
    const source = join(dir, '..', 'src', 'package');
    mkdirSync(source, { recursive: true });
    writeFileSync(join(source, 'package.json'), JSON.stringify({ name: 'edgeward', version: '1.2.4' }));
    execFileSync('tar', ['czf', join(dir, 'edgeward-1.2.4.tgz'), '-C', join(dir, '..', 'src'), 'package']);
    const updater = new Updater({ currentVersion: '1.2.3', dir });
    const { done } = await updater.begin();
    expect(await done).toEqual({
      version: '1.2.4',
      dir: join(`${dir}.staged`, '1.2.4', 'package'),
      cli: undefined,
    });
  });

  it('reports a broken archive as a failed update', async () => {
    const dir = updateDir();
    writeFileSync(join(dir, 'edgeward-1.2.4.tgz'), 'not gzip');
    const updater = new Updater({ currentVersion: '1.2.3', dir });
    const { done } = await updater.begin();
    await expect(done).rejects.toThrow(/tar could not extract edgeward-1\.2\.4\.tgz/);
    expect(updater.state).toEqual({ state: 'idle' });
  });
});
