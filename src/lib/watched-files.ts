import { createHash } from 'node:crypto';
import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { dirname } from 'node:path';

export interface WatchedFilesOptions {
  /** Quiet time after the last event before the files are read: a certificate and its key written one after the other are read as a pair. Default 250 ms. */
  debounceMs?: number;
  /** A read every so often besides the events (some filesystems miss them). Default 10 s; 0: none. */
  pollMs?: number;
  /** A read that failed, or `onChange` that threw: the old contents stay in use. */
  onError?: (error: Error) => void;
}

export interface WatchedFiles {
  close(): void;
}

/**
 * Calls `onChange` with the new contents of `paths` (in that order) each time any of them changes.
 * Kubernetes updates a mounted Secret by writing a new folder and swapping the `..data` symlink the
 * files point through: the files' own paths never see a write. So the folders holding them are
 * watched (which sees the swap), and a change is contents that differ from the last ones read
 * (compared by hash), not an event: an event without new contents calls nothing. A file missing or
 * unreadable for a moment is read again at the next event or poll; `onChange` is not called until
 * every file reads. The first contents are the ones at the call (the caller has loaded them).
 */
export function watchFiles(
  paths: readonly string[],
  onChange: (contents: string[]) => void | Promise<void>,
  options: WatchedFilesOptions = {},
): WatchedFiles {
  const { debounceMs = 250, pollMs = 10_000, onError = () => {} } = options;
  const fingerprint = (contents: string[]) => createHash('sha256').update(contents.join('\0')).digest('hex');
  const read = () => paths.map((path) => readFileSync(path, 'utf8'));
  let last = (() => {
    try {
      return fingerprint(read());
    } catch {
      return '';
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const check = async () => {
    if (closed) return;
    let contents: string[];
    try {
      contents = read();
    } catch (error) {
      onError(new Error(`reading ${paths.join(', ')} failed`, { cause: error }));
      return;
    }
    const now = fingerprint(contents);
    if (now === last) return;
    try {
      await onChange(contents);
      last = now;
    } catch (error) {
      onError(new Error(`applying the new ${paths.join(', ')} failed`, { cause: error }));
      // Remembered as seen: the same bad contents are not tried again at every event.
      last = now;
    }
  };
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void check(), debounceMs);
    timer.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const folder of new Set(paths.map((path) => dirname(path)))) {
    try {
      const watcher = watch(folder, { persistent: false }, soon);
      watcher.on('error', (error) => onError(new Error(`watching ${folder} failed`, { cause: error })));
      watchers.push(watcher);
    } catch (error) {
      onError(new Error(`watching ${folder} failed; polling only`, { cause: error }));
    }
  }
  const poll = pollMs > 0 ? setInterval(() => void check(), pollMs) : undefined;
  poll?.unref();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      clearInterval(poll);
      for (const watcher of watchers) watcher.close();
    },
  };
}
