import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorHarness } from '../support/operator-harness.js';
import type { TestServer } from '../support/server.js';

/**
 * The operator's API key from a mounted Secret (`--api-key-file`), rotated while it runs: the new
 * key is written the way the kubelet updates a Secret volume (a `..data` symlink swapped in one
 * rename), the old key is deleted on the server, and the operator goes on without a restart.
 */

const h = new OperatorHarness('key-rotation');
const { apply, yamlOf, waitFor } = h;
let t: TestServer;
const volume = mkdtempSync(join(tmpdir(), 'edgeward-operator-key-'));
let generation = 0;

/** Writes `key` as the kubelet writes a Secret volume's new contents. */
function writeKey(key: string): void {
  const folder = `..rotation_${++generation}`;
  mkdirSync(join(volume, folder));
  writeFileSync(join(volume, folder, 'api-key'), key);
  symlinkSync(folder, join(volume, '..data_tmp'));
  renameSync(join(volume, '..data_tmp'), join(volume, '..data'));
}

async function newKey(): Promise<{ id: string; token: string }> {
  const { status, body } = await t.api<{ id: string; token: string }>('POST', '/api_keys', {
    description: 'the operator’s key',
  });
  expect(status).toBe(201);
  return body;
}

let first: { id: string; token: string };

beforeAll(async () => {
  await h.start({
    operatorArgs: async (server) => {
      t = server;
      first = await newKey();
      writeKey(first.token);
      symlinkSync('..data/api-key', join(volume, 'api-key'));
      return ['--api-key-file', join(volume, 'api-key')];
    },
  });
});

afterAll(async () => {
  await h.stop();
  rmSync(volume, { recursive: true, force: true });
});

describe('the operator’s API key file', () => {
  it('is followed as its Secret rotates: the old key deleted, reconciles go on', {
    timeout: 90_000,
  }, async () => {
    await apply(yamlOf('IPPolicy', 'before', { description: 'made with the first key' }));
    await waitFor('ippolicies', 'before');

    const second = await newKey();
    writeKey(second.token);
    // The operator looks at the file every 10 s; after that the first key is no longer needed.
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    expect((await t.api('DELETE', `/api_keys/${first.id}`)).status).toBe(204);

    await apply(yamlOf('IPPolicy', 'after', { description: 'made with the rotated key' }));
    const after = await waitFor('ippolicies', 'after');
    const made = await t.api<{ description: string }>('GET', `/ip_policies/${after.status?.id}`);
    expect(made.body.description).toBe('made with the rotated key');
    expect(h.operatorOutput).not.toContain('Unauthorized');
  });
});
