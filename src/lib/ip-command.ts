import { execFileSync } from 'node:child_process';

/** iproute2's `ip ARGS`, its output; a failure names the command and says what `ip` wrote. */
export function ip(...args: string[]): string {
  try {
    return execFileSync('ip', args, { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const said = String((error as { stderr?: string }).stderr ?? '').trim() || (error as Error).message;
    throw new Error(`ip ${args.join(' ')}: ${said}`, { cause: error });
  }
}

/** An IPv4 CIDR as its first and last address, as numbers. */
export function cidrRange(cidr: string): { first: number; last: number } {
  const match = /^(\d+)\.(\d+)\.(\d+)\.(\d+)(?:\/(\d+))?$/.exec(cidr);
  if (!match) throw new Error(`not an IPv4 CIDR: ${cidr}`);
  const value = match.slice(1, 5).reduce((sum, octet) => sum * 256 + Number(octet), 0);
  const size = 2 ** (32 - Number(match[5] ?? 32));
  const first = value - (value % size);
  return { first, last: first + size - 1 };
}

export const rangesOverlap = (a: { first: number; last: number }, b: { first: number; last: number }) =>
  a.first <= b.last && b.first <= a.last;
