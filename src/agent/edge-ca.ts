import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type WatchedFiles, type WatchedFilesOptions, watchFiles } from '../lib/watched-files.js';

/**
 * What an agent trusts for the edge's certificate: PEM of the CA (or several), or a function giving
 * the current PEM, called at each dial. A CA file followed as it changes (`watchEdgeCa`) is such a
 * function: a new CA applies to the next connection to an edge, the sessions already up keep theirs.
 */
export type EdgeCa = string | Buffer | (() => string | Buffer);

/** The PEM to dial with now. */
export const currentEdgeCa = (ca: EdgeCa | undefined): string | Buffer | undefined =>
  typeof ca === 'function' ? ca() : ca;

/** The certificates of a CA file's text; throws when it holds none, or one that does not parse. */
export function parseEdgeCa(text: string, file: string): X509Certificate[] {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!blocks) throw new Error(`${file} holds no PEM certificate`);
  return blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch (cause) {
      throw new Error(`${file}: certificate ${index + 1} does not parse`, { cause });
    }
  });
}

/** Reads a CA file (`--edge-ca`); throws saying why it cannot be used (the caller names the flag). */
export function readEdgeCa(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`, {
      cause: error,
    });
  }
  parseEdgeCa(text, file);
  return text;
}

export interface EdgeCaFile {
  /** The PEM in force: the last contents of the file that held certificates. */
  current: () => string;
  close(): void;
}

/**
 * Follows a CA file whose contents `first` the caller has read (`readEdgeCa`): when the file
 * changes (a Secret Kubernetes updated by swapping its `..data` symlink included: `watchFiles`),
 * `current` gives the new PEM and `onChange` is told; contents that hold no certificate, or one that
 * does not parse, go to `onError` and the current PEM stays.
 */
export function watchEdgeCa(
  file: string,
  first: string,
  options: Omit<WatchedFilesOptions, 'onError'> & {
    onChange?: (certificates: X509Certificate[]) => void;
    onError?: (error: Error) => void;
  } = {},
): EdgeCaFile {
  let pem = first;
  const { onChange, ...watchOptions } = options;
  const watch: WatchedFiles = watchFiles(
    [file],
    ([text = '']) => {
      const certificates = parseEdgeCa(text, file);
      pem = text;
      onChange?.(certificates);
    },
    watchOptions,
  );
  return { current: () => pem, close: () => watch.close() };
}
