import { type DestinationStream, type Logger, pino } from 'pino';
import { REDACTED, SENSITIVE_KEYS } from './redaction.js';

export type { Logger } from 'pino';

const snake = (key: string) => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** Every sensitive key, camelCase and snake_case, at the top level and two levels down. */
export const REDACT_PATHS: string[] = [
  ...new Set(SENSITIVE_KEYS.flatMap((key) => [key, snake(key)])),
].flatMap((key) => [key, `*.${key}`, `*.*.${key}`]);

export interface LoggerOptions {
  level?: string;
  /** Where lines go; stdout by default. Tests pass a stream to read what was logged. */
  destination?: DestinationStream;
  /** Fields on every line (e.g. `{ component: 'operator' }`). */
  base?: Record<string, unknown>;
}

/** The operator's root logger: JSON lines, ISO times, secrets censored by key name. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      base: options.base ?? { component: 'edgeward-operator' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: REDACTED },
    },
    options.destination,
  );
}

/** The fields that say which object a line is about; `id` is the server id once known. */
export interface ObjectFields {
  kind: string;
  namespace?: string;
  name: string;
  id?: string;
  /** One reconcile pass, to group its lines. */
  reconcileId?: string;
}

export function objectLogger(parent: Logger, fields: ObjectFields): Logger {
  const bindings: Record<string, string> = { kind: fields.kind, name: fields.name };
  if (fields.namespace) bindings.namespace = fields.namespace;
  if (fields.id) bindings.id = fields.id;
  if (fields.reconcileId) bindings.reconcileId = fields.reconcileId;
  return parent.child(bindings);
}

/** A logger that drops everything: the default when a caller gives none. */
export const silentLogger: Logger = pino({ level: 'silent' });
