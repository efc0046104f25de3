import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join, sep } from 'node:path';

/**
 * How `edgeward agent` updates itself, small and local: `--update-dir DIR` holds packed releases
 * named `edgeward-<semver>.tgz` (what `npm pack` writes). An `update` command picks the highest
 * release of the running major version that is newer than the running one, and extracts it (with
 * the `tar` CLI) into `DIR.staged/<version>/package`. The running process keeps running the old
 * code; a later `restart` re-execs the staged `package/dist/cli.js` (see the agent CLI).
 *
 * An npm tarball holds no dependencies: unless the release bundles its own `node_modules`, the
 * staged package gets a symlink to the running installation's dependencies, which fits a release
 * of the same major version with the same dependency set. A release that needs other dependencies
 * must bundle them (`bundleDependencies` in its package.json).
 */

/** Why the agent does not update now; the message reaches whoever sent the command. */
export class UpdateRefused extends Error {}

export interface SemVer {
  major: number;
  minor: number;
  patch: number;
  /** The pre-release part after `-`, if any. */
  prerelease: string | undefined;
}

const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?$/;

export function parseSemVer(text: string): SemVer | undefined {
  const match = SEMVER.exec(text);
  if (!match) return undefined;
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]), prerelease: match[4] };
}

/**
 * Whether release `candidate` (never a pre-release) is newer than `current`: a higher
 * major.minor.patch, or the same one when `current` is that version's pre-release.
 */
function isNewer(candidate: SemVer, current: SemVer): boolean {
  const order = [
    candidate.major - current.major,
    candidate.minor - current.minor,
    candidate.patch - current.patch,
  ].find((difference) => difference !== 0);
  if (order !== undefined) return order > 0;
  return current.prerelease !== undefined;
}

const RELEASE_FILE = /^edgeward-(.+)\.tgz$/;

/**
 * The release an agent at `currentVersion` updates to, from the file names of an update directory:
 * the highest `edgeward-<version>.tgz` with the same major version that is newer than the running
 * one. Pre-releases and names that are not a version are ignored; never a new major version.
 */
export function pickUpdate(
  currentVersion: string,
  fileNames: readonly string[],
): { version: string; file: string } | undefined {
  const current = parseSemVer(currentVersion);
  if (!current) return undefined;
  let best: { version: SemVer; text: string; file: string } | undefined;
  for (const file of fileNames) {
    const text = RELEASE_FILE.exec(file)?.[1];
    const version = text === undefined ? undefined : parseSemVer(text);
    if (!text || !version || version.prerelease !== undefined || text.includes('+')) continue;
    if (version.major !== current.major || !isNewer(version, current)) continue;
    if (!best || isNewer(version, best.version)) best = { version, text, file };
  }
  return best && { version: best.text, file: best.file };
}

/** A release extracted and ready to run at the next restart. */
export interface StagedRelease {
  version: string;
  /** The extracted package (holds `package.json`). */
  dir: string;
  /** The release's CLI entry point, when the package has one. */
  cli: string | undefined;
}

export type UpdateState =
  | { state: 'idle' }
  | { state: 'updating'; version: string | undefined }
  | { state: 'updated'; staged: StagedRelease };

export interface UpdaterOptions {
  /** The version running now. */
  currentVersion: string;
  /** The directory of packed releases; without one no update is ever available. */
  dir?: string | undefined;
  /** False when the configuration disabled update checks (`--no-update-check`). */
  enabled?: boolean | undefined;
  /** Extracts a `.tgz` into a directory; the `tar` CLI by default (replaceable in tests). */
  extract?: (tgz: string, into: string, signal: AbortSignal) => Promise<void>;
}

/**
 * The update state machine: idle → updating → updated (→ the process restarts into the staged
 * release). A failed update goes back to idle. `begin()` refuses with the spec's four reasons.
 */
export class Updater {
  #state: UpdateState = { state: 'idle' };
  #abort = new AbortController();

  constructor(private readonly options: UpdaterOptions) {}

  get state(): UpdateState {
    return this.#state;
  }

  /** The release to run at the next restart, if an update finished. */
  get staged(): StagedRelease | undefined {
    return this.#state.state === 'updated' ? this.#state.staged : undefined;
  }

  /**
   * Starts an update: resolves with the version chosen once the update has begun (the command can
   * be answered), and `done`, which settles when the release is staged (or the update failed).
   * Rejects with an `UpdateRefused` when the agent does not update now.
   */
  async begin(): Promise<{ version: string; done: Promise<StagedRelease> }> {
    if (this.options.enabled === false)
      throw new UpdateRefused('update checks are disabled by the agent configuration');
    if (this.#state.state === 'updating') throw new UpdateRefused('the agent is already updating');
    if (this.#state.state === 'updated')
      throw new UpdateRefused(`already updated to ${this.#state.staged.version}, restart to run it`);
    // From here a second command is "already updating", also while the directory is read.
    this.#state = { state: 'updating', version: undefined };
    const names = this.options.dir ? await readdir(this.options.dir).catch(() => []) : [];
    const pick = pickUpdate(this.options.currentVersion, names);
    if (!pick || !this.options.dir) {
      this.#state = { state: 'idle' };
      throw new UpdateRefused('no update available');
    }
    this.#state = { state: 'updating', version: pick.version };
    const done = this.#stage(join(this.options.dir, pick.file), pick.version).then(
      (staged) => {
        this.#state = { state: 'updated', staged };
        return staged;
      },
      (error: unknown) => {
        this.#state = { state: 'idle' };
        throw error;
      },
    );
    // Whoever began the update may not wait for it; a failure is reported through `done` only.
    done.catch(() => {});
    return { version: pick.version, done };
  }

  /** Stops an update in progress (the agent is exiting). */
  cancel(): void {
    this.#abort.abort();
    this.#abort = new AbortController();
  }

  async #stage(tgz: string, version: string): Promise<StagedRelease> {
    const updateDir = this.options.dir as string;
    const into = join(dirname(updateDir), `${basename(updateDir)}.staged`, version);
    await rm(into, { recursive: true, force: true });
    await mkdir(into, { recursive: true });
    await (this.options.extract ?? extractWithTar)(tgz, into, this.#abort.signal);
    const dir = join(into, 'package');
    const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8').catch(() => '{}')) as {
      version?: unknown;
    };
    if (manifest.version !== version) {
      await rm(into, { recursive: true, force: true });
      throw new Error(
        `${basename(tgz)} holds version ${String(manifest.version ?? 'none')}, not ${version}: not staged`,
      );
    }
    const dependencies = runningDependencies();
    if (!existsSync(join(dir, 'node_modules')) && dependencies)
      await symlink(dependencies, join(dir, 'node_modules'), 'dir');
    const cli = join(dir, 'dist', 'cli.js');
    return { version, dir, cli: existsSync(cli) ? cli : undefined };
  }
}

function extractWithTar(tgz: string, into: string, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('tar', ['-xzf', tgz, '-C', into], { signal }, (error, _stdout, stderr) => {
      if (error)
        reject(new Error(`tar could not extract ${basename(tgz)}: ${stderr.trim() || error.message}`));
      else resolve();
    });
  });
}

/** The `node_modules` directory the running installation resolves its dependencies from. */
function runningDependencies(): string | undefined {
  try {
    const resolved = createRequire(import.meta.url).resolve('zod');
    const at = resolved.lastIndexOf(`${sep}node_modules${sep}`);
    return at < 0 ? undefined : resolved.slice(0, at + `${sep}node_modules`.length);
  } catch {
    return undefined;
  }
}
