import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * An install of this package takes better-sqlite3's prebuilt binary from its release host, which
 * this machine cannot reach; the checkout's own build of the same version is offered where
 * prebuild-install looks for local prebuilds, so a test's `npm install`/`npm ci` does not compile
 * it again. A different version or Node.js finds none there and compiles, as a user's would.
 * Returns the environment to install with (none when the checkout has no build).
 */
export async function betterSqlitePrebuild(dir: string): Promise<Record<string, string>> {
  const source = join(ROOT, 'node_modules/better-sqlite3');
  const binary = join(source, 'build/Release/better_sqlite3.node');
  if (!existsSync(binary)) return {};
  const { version } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')) as { version: string };
  const stage = join(dir, 'prebuild-stage');
  mkdirSync(join(stage, 'build/Release'), { recursive: true });
  copyFileSync(binary, join(stage, 'build/Release/better_sqlite3.node'));
  const prebuilds = join(dir, 'prebuilds');
  mkdirSync(prebuilds);
  const archive = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await run('tar', ['-czf', join(prebuilds, archive), '-C', stage, 'build/Release/better_sqlite3.node']);
  return { npm_config_better_sqlite3_local_prebuilds: prebuilds };
}
