import { readFileSync, statSync } from 'node:fs';

export interface ApiKeyFileOptions {
  /** How often the file is looked at again. Default 10 s (the kubelet refreshes Secret volumes in about a minute). */
  recheckMs?: number;
  /** A re-read that failed or found no key: the last good key stays in use meanwhile. */
  onError?: (error: Error) => void;
  now?: () => number;
}

function readKey(path: string): string {
  const key = readFileSync(path, 'utf8').trim();
  if (key === '') throw new Error(`${path}: the API key file is empty`);
  return key;
}

/**
 * The API key of a mounted Secret, followed as the Secret rotates: a function giving the current
 * key, which looks at the file again at most every `recheckMs` (its inode, size and mtime: the
 * kubelet swaps a Secret volume's files by renaming a symlink) and reads it when it changed. The
 * first read must succeed (the operator refuses to start without a key); a later failed or empty
 * read is reported and the last good key kept, so a half-written rotation never blanks the key.
 */
export function apiKeyFromFile(path: string, options: ApiKeyFileOptions = {}): () => string {
  const recheckMs = options.recheckMs ?? 10_000;
  const now = options.now ?? Date.now;
  const identity = () => {
    const stat = statSync(path);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  };
  let seen = identity();
  let key = readKey(path);
  let checkedAt = now();
  return () => {
    if (now() - checkedAt < recheckMs) return key;
    checkedAt = now();
    try {
      const current = identity();
      if (current !== seen) {
        key = readKey(path);
        seen = current;
      }
    } catch (cause) {
      options.onError?.(new Error(`re-reading the API key file ${path}; keeping the last key`, { cause }));
    }
    return key;
  };
}
