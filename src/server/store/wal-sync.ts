import { type FileHandle, open } from 'node:fs/promises';

/** Makes what was written to a log durable: resolves once it is on disk. */
export interface LogSync {
  sync(): Promise<void>;
}

/**
 * fsync of a SQLite database's write-ahead log on libuv's thread pool, so the event loop goes on
 * serving requests while the disk flushes. With `synchronous=FULL` SQLite makes exactly this call
 * inside COMMIT, blocking the only JavaScript thread for the disk's latency (half a millisecond to
 * several here) on every batch of writes.
 *
 * `sync()` resolves once an fsync that began after the call has finished, so everything written to
 * the log before the call is on disk. Calls made while one fsync runs share the next one.
 */
export class WalSync implements LogSync {
  readonly #path: string;
  #handle: Promise<FileHandle> | undefined;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #closed = false;

  constructor(walPath: string) {
    this.#path = walPath;
  }

  sync(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error(`fsync of ${this.#path} after the store was closed`));
    if (!this.#running) return this.#start();
    // The running fsync may have begun before the caller's write: it needs the next one.
    this.#queued ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#queued = undefined;
        return this.#start();
      });
    return this.#queued;
  }

  /** Waits for the fsyncs asked for, then closes the log's descriptor; later calls are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    await (this.#queued ?? this.#running)?.catch(() => undefined);
    const handle = await this.#handle?.catch(() => undefined);
    this.#handle = undefined;
    await handle?.close();
  }

  #start(): Promise<void> {
    const running = this.#open()
      .then((handle) => handle.sync())
      .catch((error: unknown) => {
        throw new Error(`fsync of ${this.#path} failed: the last writes may not be on disk`, {
          cause: error,
        });
      })
      .finally(() => {
        if (this.#running === running) this.#running = undefined;
      });
    this.#running = running;
    return running;
  }

  /**
   * Opened once and kept: the log exists from the first write in WAL mode until the last connection
   * closes, so it is the same file for the life of the store. A failed open is tried again next time.
   */
  #open(): Promise<FileHandle> {
    if (!this.#handle) {
      const opening = open(this.#path, 'r');
      opening.catch(() => {
        if (this.#handle === opening) this.#handle = undefined;
      });
      this.#handle = opening;
    }
    return this.#handle;
  }
}
