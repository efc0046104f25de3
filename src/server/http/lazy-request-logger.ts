import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilent, Logger } from 'pino';

type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger that becomes a pino child (with the request id bound) only when something is
 * logged at an enabled level. Fastify makes a child logger for every request; at the server's
 * usual `warn` level nearly none ever writes a line, and making one (bindings, redaction) cost more
 * than a quarter of the server's own work on a `GET`.
 */
export class LazyRequestLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get level(): LevelWithSilent | string {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: LevelWithSilent | string) {
    this.#real().level = level;
  }

  // Methods on the prototype, not closures per instance: one of these is made for every request.
  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#log('error', args);
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }
  info(...args: unknown[]): void {
    this.#log('info', args);
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }

  #real(): Logger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  #enabled(level: Level): boolean {
    if (this.#child) return this.#child.isLevelEnabled(level);
    const threshold = this.#options.level ?? this.#parent.level;
    const values = this.#parent.levels.values;
    return (values[level] ?? 0) >= (values[threshold] ?? Number.POSITIVE_INFINITY);
  }

  #log(level: LogMethod, args: unknown[]): void {
    if (!this.#enabled(level)) return;
    // pino's LogFn is overloaded; the arguments are passed on exactly as given.
    (this.#real()[level] as (...given: unknown[]) => void)(...args);
  }
}

/** Fastify's `childLoggerFactory` for a pino `loggerInstance`: see `LazyRequestLogger`. */
export function lazyChildLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  // Another logger than pino (no level table to consult): its own child, made at once.
  if (!('levels' in logger && 'isLevelEnabled' in logger)) return logger.child(bindings, options);
  // It has every method of FastifyBaseLogger; its log methods take pino's overloads as rest arguments.
  return new LazyRequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}
