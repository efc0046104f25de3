import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What curl -i printed: the final response (interim 1xx answers skipped) and its exit code. */
export interface CurlResult {
  code: number;
  status: number;
  headers: string;
  body: string;
  stderr: string;
}

/**
 * curl to `https://host:port/path` on 127.0.0.1 (`--resolve`, so SNI and Host are `host`), with
 * the edge's certificate unchecked (`-k`). Never throws: a failed transfer has a non-zero `code`.
 */
export async function curlHttps(
  host: string,
  port: number,
  path: string,
  args: string[] = [],
): Promise<CurlResult> {
  try {
    const { stdout, stderr } = await run(
      'curl',
      [
        '-sS',
        '-k',
        '-i',
        '--max-time',
        '10',
        '--resolve',
        `${host}:${port}:127.0.0.1`,
        ...args,
        `https://${host}:${port}${path}`,
      ],
      { maxBuffer: 64 << 20, encoding: 'latin1' },
    );
    return parseCurl(stdout, stderr);
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { ...parseCurl(failure.stdout ?? '', failure.stderr ?? ''), code: failure.code ?? -1 };
  }
}

function parseCurl(output: string, stderr: string): CurlResult {
  // Interim answers (100 Continue) come first: the final response follows them.
  let stdout = output;
  while (/^HTTP\/[\d.]+ 1\d\d/.test(stdout)) stdout = stdout.slice(stdout.indexOf('\r\n\r\n') + 4);
  const split = stdout.indexOf('\r\n\r\n');
  const headers = split === -1 ? stdout : stdout.slice(0, split);
  const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(headers)?.[1] ?? 0);
  return { code: 0, status, headers, body: split === -1 ? '' : stdout.slice(split + 4), stderr };
}

/** The value of one response header curl printed, undefined when absent. */
export function headerOf(result: CurlResult, name: string): string | undefined {
  for (const line of result.headers.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name.toLowerCase())
      return line.slice(colon + 1).trim();
  }
  return undefined;
}
