/**
 * Field names whose values never reach a log line, an Event or a condition message. Compared
 * case-insensitively with `_`/`-` ignored, so `client_secret` and `clientSecret` both match.
 */
export const SENSITIVE_KEYS = [
  'token',
  'authtoken',
  'secret',
  'clientSecret',
  'privateKey',
  'apiKey',
  'password',
  'authorization',
  'secretAccessKey',
  'credentials',
] as const;

export const REDACTED = '[REDACTED]';

const keyPattern = SENSITIVE_KEYS.map((key) =>
  key
    .split(/(?=[A-Z])/)
    .map((part) => part.toLowerCase())
    .join('[_-]?'),
).join('|');

/** `key: value`, `key=value`, `"key": "value"` for a sensitive key (any word ending in one). */
const KEY_VALUE = new RegExp(
  `(["']?\\w*(?:${keyPattern})["']?\\s*[:=]\\s*)("[^"]*"|'[^']*'|[^\\s,;}]+)`,
  'gi',
);
const PEM_PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g;
const BEARER = /\b(bearer\s+)[A-Za-z0-9._~+/=-]+/gi;

/**
 * Masks secrets in free text (Event messages, condition messages, error strings that quote a
 * server's response). Defence in depth: callers should not put secrets there in the first place.
 */
export function redactText(text: string): string {
  return text
    .replace(PEM_PRIVATE_KEY, REDACTED)
    .replace(BEARER, `$1${REDACTED}`)
    .replace(KEY_VALUE, `$1${REDACTED}`);
}
