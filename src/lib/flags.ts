/**
 * One flag: how `node:util` parses it and how `--help` shows it, in one row, so a command's help
 * can never name a flag its parser does not take (or miss one it does).
 */
export interface Flag {
  type: 'string' | 'boolean';
  /** Placeholder in the help: `--port PORT`. */
  value?: string;
  /** Shown as "(default …)" unless `defaultText` says it better. */
  default?: string;
  /** What the help says the default is, when it is not a literal (`the host of --edge-addr`). */
  defaultText?: string;
  multiple?: boolean;
  short?: string;
  help: string;
}

export type Flags = Record<string, Flag>;

type FlagValue<F extends Flag> = F['type'] extends 'boolean'
  ? boolean | undefined
  : F['multiple'] extends true
    ? string[] | undefined
    : F['default'] extends string
      ? string
      : string | undefined;

export type FlagValues<F extends Flags> = { [K in keyof F]: FlagValue<F[K]> };

/**
 * A duration flag in seconds (fractions allowed), as milliseconds: `fallbackMs` when absent; above
 * 0 and up to `maxSeconds`, or an error naming the flag.
 */
export function secondsFlag(
  flag: (name: string) => string | undefined,
  prefix: string,
  name: string,
  fallbackMs: number,
  maxSeconds: number,
): number {
  const text = flag(name);
  if (text === undefined) return fallbackMs;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0 || value > maxSeconds) {
    throw new Error(
      `--${prefix}${name}: '${text}' is not a number of seconds (above 0, up to ${maxSeconds})`,
    );
  }
  return Math.round(value * 1000);
}
