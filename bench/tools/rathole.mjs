// Finds or builds rathole (https://github.com/rapiz1/rathole), the open-source baseline for
// bench/tunnel.mjs. Built once from crates.io with `cargo install` into
// ~/.cache/edgeward/tools/rathole-<version>/ and reused after that.
//   node bench/tools/rathole.mjs          build if missing, print the binary's path and features
// Env: RATHOLE_VERSION (default 0.5.0), RATHOLE_BIN (use this binary, build nothing),
//      RATHOLE_FEATURES (cargo features; default: the crate's defaults, i.e. tls + noise + websocket).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const RATHOLE_VERSION = process.env.RATHOLE_VERSION ?? '0.5.0';

function cacheDir() {
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edgeward', 'tools');
}

function which(cmd) {
  const found = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

/** Builds with the given feature set; resolves to { ok, seconds, log }. Progress lines go to `log`. */
function cargoInstall(root, features, log) {
  // Not --locked: rathole 0.5.0's Cargo.lock pins time 0.3.29, which current rustc rejects
  // (E0282 in time's format_description); the semver-compatible newest deps compile.
  const args = ['install', 'rathole', '--version', RATHOLE_VERSION, '--root', root];
  if (features) args.push('--no-default-features', '--features', features);
  log(`rathole: cargo ${args.join(' ')}  (a few minutes on 2 cores)`);
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('cargo', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    let compiled = 0;
    let lastReport = Date.now();
    const onData = (chunk) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-8000);
      compiled += (text.match(/^\s*Compiling /gm) ?? []).length;
      if (Date.now() - lastReport > 15_000) {
        lastReport = Date.now();
        log(`rathole: building… ${compiled} crates compiled, ${Math.round((Date.now() - started) / 1000)} s`);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) =>
      resolve({ ok: code === 0, seconds: (Date.now() - started) / 1000, log: tail }),
    );
    child.once('error', (error) => resolve({ ok: false, seconds: 0, log: String(error) }));
  });
}

/**
 * Returns { bin, version, features, transports, buildSeconds? } or { error } when rathole can be
 * neither found nor built. transports lists the rathole transports the binary was built with.
 */
export async function findOrBuildRathole({ log = (line) => console.error(line) } = {}) {
  if (process.env.RATHOLE_BIN) {
    if (!existsSync(process.env.RATHOLE_BIN))
      return { error: `RATHOLE_BIN=${process.env.RATHOLE_BIN} does not exist` };
    const features = process.env.RATHOLE_FEATURES ?? 'default';
    return {
      bin: process.env.RATHOLE_BIN,
      version: 'unknown (RATHOLE_BIN)',
      features,
      transports: transportsOf(features),
    };
  }
  const root = join(cacheDir(), `rathole-${RATHOLE_VERSION}`);
  const bin = join(root, 'bin', 'rathole');
  const marker = join(root, 'edgeward-build.json');
  if (existsSync(bin) && existsSync(marker))
    return { bin, version: RATHOLE_VERSION, ...JSON.parse(readFileSync(marker, 'utf8')) };
  if (!which('cargo')) return { error: 'cargo is not installed (install Rust, or set RATHOLE_BIN)' };
  mkdirSync(root, { recursive: true });
  // Default features first (tls via tokio-native-tls/OpenSSL, needs libssl-dev + pkg-config; noise;
  // websocket); if that fails, plain TCP only (`server,client`), and say so.
  const attempts = process.env.RATHOLE_FEATURES
    ? [process.env.RATHOLE_FEATURES]
    : [undefined, 'server,client'];
  let last;
  for (const features of attempts) {
    last = await cargoInstall(root, features, log);
    if (last.ok) {
      const built = {
        features: features ?? 'default',
        transports: transportsOf(features ?? 'default'),
        buildSeconds: Math.round(last.seconds),
      };
      writeFileSync(marker, `${JSON.stringify(built)}\n`);
      log(`rathole: built in ${built.buildSeconds} s (features: ${built.features})`);
      return { bin, version: RATHOLE_VERSION, ...built };
    }
    log(
      `rathole: build with features '${features ?? 'default'}' failed after ${Math.round(last.seconds)} s:\n${last.log.slice(-2000)}`,
    );
  }
  rmSync(join(root, 'bin'), { recursive: true, force: true });
  return { error: `cargo install rathole ${RATHOLE_VERSION} failed (see the log above)` };
}

function transportsOf(features) {
  const set = new Set(features === 'default' ? ['tls', 'noise', 'websocket'] : features.split(','));
  return ['tcp', ...['tls', 'noise', 'websocket'].filter((t) => set.has(t))];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const found = await findOrBuildRathole();
  if (found.error) {
    console.error(found.error);
    process.exit(1);
  }
  console.log(JSON.stringify(found));
}
