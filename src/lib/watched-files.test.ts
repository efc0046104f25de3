import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/eventually.js';
import { MountedSecret } from '../../test/support/mounted-secret.js';
import { type WatchedFiles, watchFiles } from './watched-files.js';

describe('watchFiles', () => {
  const cleanup: Array<() => void> = [];
  afterEach(() => {
    for (const step of cleanup.splice(0)) step();
  });
  const watching = (watcher: WatchedFiles) => {
    cleanup.push(() => watcher.close());
    return watcher;
  };

  it('hears a mounted Secret updated by a symlink swap, both files at once', async () => {
    const secret = new MountedSecret({ 'tls.crt': 'cert 1', 'tls.key': 'key 1' });
    cleanup.push(() => secret.remove());
    const seen: string[][] = [];
    watching(
      watchFiles([secret.path('tls.crt'), secret.path('tls.key')], (contents) => void seen.push(contents), {
        debounceMs: 50,
        pollMs: 0,
      }),
    );
    secret.update({ 'tls.crt': 'cert 2', 'tls.key': 'key 2' });
    await waitFor(() => seen.length === 1, { what: 'the update', timeoutMs: 5000 });
    expect(seen).toEqual([['cert 2', 'key 2']]);
  });

  it('calls nothing for an event without new contents, and again for the next change', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edgeward-watch-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'ca.pem');
    writeFileSync(file, 'ca 1');
    const seen: string[][] = [];
    watching(watchFiles([file], (contents) => void seen.push(contents), { debounceMs: 50, pollMs: 0 }));
    writeFileSync(file, 'ca 1'); // the same bytes written again
    utimesSync(file, new Date(), new Date());
    writeFileSync(join(dir, 'unrelated'), 'x');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toEqual([]);
    writeFileSync(file, 'ca 2');
    await waitFor(() => seen.length === 1, { what: 'the change', timeoutMs: 5000 });
    expect(seen).toEqual([['ca 2']]);
  });

  it('reports a file that cannot be read, keeps the old contents, and applies the next good ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edgeward-watch-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'key.pem');
    writeFileSync(file, 'key 1');
    const seen: string[][] = [];
    const errors: string[] = [];
    watching(
      watchFiles([file], (contents) => void seen.push(contents), {
        debounceMs: 50,
        pollMs: 0,
        onError: (error) => errors.push(error.message),
      }),
    );
    rmSync(file);
    await waitFor(() => errors.length > 0, { what: 'the failed read', timeoutMs: 5000 });
    expect(errors[0]).toContain(`reading ${file} failed`);
    expect(seen).toEqual([]);
    writeFileSync(file, 'key 2');
    await waitFor(() => seen.length === 1, { what: 'the next good contents', timeoutMs: 5000 });
    expect(seen).toEqual([['key 2']]);
  });

  it('a change that fails to apply is reported and not retried until the files change again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edgeward-watch-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'cert.pem');
    writeFileSync(file, 'good');
    const tried: string[] = [];
    const errors: string[] = [];
    watching(
      watchFiles(
        [file],
        ([text]) => {
          tried.push(String(text));
          if (text === 'bad') throw new Error('not a certificate');
        },
        { debounceMs: 50, pollMs: 100, onError: (error) => errors.push(error.message) },
      ),
    );
    writeFileSync(file, 'bad');
    await waitFor(() => errors.length === 1, { what: 'the failed apply', timeoutMs: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 400)); // polls pass: no retry of the same bytes
    expect(tried).toEqual(['bad']);
    writeFileSync(file, 'fixed');
    await waitFor(() => tried.length === 2, { what: 'the fixed file', timeoutMs: 5000 });
    expect(tried).toEqual(['bad', 'fixed']);
  });
});
