import type { z } from 'zod';

/** `sources[0].type`-style path, the way a caller wrote the field. */
export function fieldPath(path: ReadonlyArray<PropertyKey>, root?: string): string {
  let out = root ?? '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? 'body' : out;
}

/** One human sentence naming the first bad field, e.g. "description: must be at most 255 bytes". */
export function describeZodError(error: z.ZodError, root?: string): string {
  const issue = error.issues[0];
  if (!issue) return `${root ?? 'body'}: invalid`;
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((key) => fieldPath([...issue.path, key], root));
    return `${keys.join(', ')}: unknown field${keys.length > 1 ? 's' : ''}`;
  }
  const where = fieldPath(issue.path, root);
  // A schema's own message beats the generic wording below.
  if (!issue.message.startsWith('Invalid ')) return `${where}: ${issue.message}`;
  if (issue.code === 'invalid_type') {
    const received =
      issue.input === undefined ? 'missing' : issue.input === null ? 'null' : typeof issue.input;
    if (issue.input === undefined) return `${where}: is required`;
    // JSON has no Infinity, but a literal like 1e400 parses to it: "got number" would be a riddle.
    if (issue.expected === 'number' && typeof issue.input === 'number')
      return `${where}: must be a finite number`;
    return `${where}: must be ${article(issue.expected)}, got ${received}`;
  }
  if (issue.code === 'invalid_value') {
    return `${where}: must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return `${where}: ${issue.message}`;
}

function article(expected: string): string {
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}
