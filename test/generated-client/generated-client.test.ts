import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walkPages } from '../support/paging.js';
import { ADMIN_KEY, idPattern, startTestServer, type TestServer } from '../support/server.js';

/**
 * The served OpenAPI document as another language's tooling sees it: openapi-python-client
 * (test/generated-client/requirements.txt) generates a Python package from it, and
 * test/generated-client/scenario.py drives IP policies through that package against this server.
 */

const SCENARIO = fileURLToPath(new URL('./scenario.py', import.meta.url));
const INSTALL = 'pip install -r test/generated-client/requirements.txt';

/** Why this machine cannot generate or run the Python client, or undefined when it can. */
function missingTools(): string | undefined {
  const generator = spawnSync('openapi-python-client', ['--version'], { encoding: 'utf8' });
  if (generator.error || generator.status !== 0) {
    return `openapi-python-client is not installed (${INSTALL})`;
  }
  // The generated code needs Python 3.11+ (typing.Self, enum.StrEnum) with httpx and attrs.
  const python = spawnSync(
    'python3',
    ['-c', 'import sys, httpx, attrs; assert sys.version_info >= (3, 11), sys.version'],
    { encoding: 'utf8' },
  );
  if (python.error) return 'python3 is not installed';
  if (python.status !== 0) {
    const last = python.stderr.trim().split('\n').at(-1);
    return `python3 cannot run the generated client (needs 3.11+ with httpx and attrs; ${INSTALL}): ${last}`;
  }
  return undefined;
}

const missing = missingTools();

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command without blocking the event loop: the server under test lives in this process,
 * so a synchronous child could never get an answer from it.
 */
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

interface Summary {
  created: string[];
  seen: string[];
  pages: number;
  updated_description: string;
  deleted: string;
  not_found: { error_code: string; status_code: number; msg: string };
}

type PolicyList = { ip_policies: { id: string }[]; uri: string; next_page_uri: string | null };

let t: TestServer | undefined;
let workDir: string | undefined;
beforeAll(async () => {
  if (missing) return;
  t = await startTestServer();
  workDir = mkdtempSync(join(tmpdir(), 'edgeward-generated-client-'));
});
afterAll(async () => {
  await t?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

describe('a client generated from the served OpenAPI document (openapi-python-client)', () => {
  it('generates without warnings and drives IP policies end to end', {
    timeout: 120_000,
  }, async (context) => {
    context.skip(missing !== undefined, missing);
    if (!t || !workDir) throw new Error('no test server');

    const served = await t.api('GET', '/openapi.json', undefined, { key: null, version: null });
    expect(served.status).toBe(200);
    const documentPath = join(workDir, 'openapi.json');
    writeFileSync(documentPath, served.text);

    // --fail-on-warning: a part of the document the generator had to skip fails the generation.
    const generated = await run('openapi-python-client', [
      'generate',
      '--path',
      documentPath,
      '--output-path',
      join(workDir, 'edgeward_client'),
      '--meta',
      'none',
      '--fail-on-warning',
    ]);
    const generatorOutput = `${generated.stdout}\n${generated.stderr}`;
    expect(generated.code, generatorOutput).toBe(0);
    expect(generatorOutput).not.toMatch(/warning|error/i);

    const scenario = await run('python3', [SCENARIO], {
      PYTHONPATH: workDir,
      PYTHONDONTWRITEBYTECODE: '1',
      EDGEWARD_URL: t.baseUrl,
      EDGEWARD_ADMIN_KEY: ADMIN_KEY,
    });
    expect(scenario.code, `${scenario.stdout}\n${scenario.stderr}`).toBe(0);
    const summary = JSON.parse(scenario.stdout.trim().split('\n').at(-1) ?? '') as Summary;

    expect(summary.created).toHaveLength(5);
    for (const id of summary.created) {
      expect(id).toMatch(idPattern('ipp'));
      expect(
        summary.seen.filter((seen) => seen === id),
        id,
      ).toHaveLength(1);
    }
    expect(summary.pages).toBeGreaterThanOrEqual(3);
    expect(summary.updated_description).toBe('hq');
    expect(summary.deleted).toBe(summary.created[0]);
    expect(summary.not_found).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });

    // The server's own view over raw HTTP: the deleted policy is gone, the others are there, and
    // a walk in pages of two serves what the Python client saw, less the deleted one.
    const gone = await t.api('GET', `/ip_policies/${summary.deleted}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
    for (const id of summary.created.slice(1)) {
      const kept = await t.api('GET', `/ip_policies/${id}`);
      expect(kept.status, id).toBe(200);
      expect(kept.body).toMatchObject({ id, description: '', metadata: '' });
    }
    const { seen } = await walkPages<PolicyList>(t, '/ip_policies?limit=2', 'ip_policies');
    expect(seen).toEqual(summary.seen.filter((id) => id !== summary.deleted));
  });
});
