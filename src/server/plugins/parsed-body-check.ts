import { fieldPath } from '../errors/zod-issues.js';

/**
 * How deeply a request body's arrays and objects may nest by default (`--max-json-depth`). The
 * fields routes define nest a few levels (a policy's log `metadata`, in `inbound[0].actions[0]
 * .config.metadata`, is the 7th); 64 leaves free-form members room and keeps every walk over a
 * body, ours and the libraries', far from the stack's limit (a recursive one failed near 3,800).
 */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/** The most `--max-json-depth` may allow: well below the stack's limit for any walk over a body. */
export const MAX_JSON_DEPTH_CEILING = 1000;

/** The longest field path a refusal quotes; a path 64 levels deep under long keys is cut there. */
const MAX_QUOTED_PATH = 200;

/** `String.prototype.isWellFormed` (Node 20+): the ES2023 library this project compiles against lacks it. */
function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** An array or object of the body and where it sits, linked to its parent to spell its path only when refused. */
interface Container {
  value: object;
  depth: number;
  parent: Container | undefined;
  key: string | number;
}

function pathOf(container: Container, member?: string | number): string {
  const parts: Array<string | number> = member === undefined ? [] : [member];
  for (let at: Container | undefined = container; at?.parent !== undefined; at = at.parent)
    parts.push(at.key);
  parts.reverse();
  // `body[0][1]` for a body that is an array, `rules[0]` for a member of the body object.
  const path = fieldPath(parts, typeof parts[0] === 'number' ? 'body' : undefined);
  return path.length > MAX_QUOTED_PATH ? `${path.slice(0, MAX_QUOTED_PATH)}…` : path;
}

/** Said of a string (or, with `member names`, of an object's keys) holding an unpaired surrogate. */
function lonelySurrogate(path: string, what = 'must'): string {
  return `${path}: ${what} be well-formed Unicode (no unpaired surrogate such as \\ud800)`;
}

/**
 * What is wrong with a parsed JSON body that JSON.parse accepts, as a message naming the field, or
 * undefined: arrays and objects nested deeper than `maxDepth` (the root is level 1), and, when
 * `checkSurrogates`, a string or member name holding a lone UTF-16 surrogate. Iterative, so no
 * depth of input can exhaust the stack here.
 */
export function parsedBodyDefect(
  body: unknown,
  options: { maxDepth: number; checkSurrogates: boolean },
): string | undefined {
  // The common case, a body within the limit, costs one lean pass; paths are spelled only for a refusal.
  if (!options.checkSurrogates && !nestsDeeperThan(body, options.maxDepth)) return undefined;
  return describeDefect(body, options);
}

/** Whether `body`'s arrays and objects nest deeper than `maxDepth`: the depth check without paths. */
function nestsDeeperThan(body: unknown, maxDepth: number): boolean {
  if (body === null || typeof body !== 'object') return false;
  const values: object[] = [body];
  const depths: number[] = [1];
  for (let value = values.pop(); value !== undefined; value = values.pop()) {
    const depth = depths.pop() as number;
    if (depth > maxDepth) return true;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        const member: unknown = value[index];
        if (member !== null && typeof member === 'object') {
          values.push(member);
          depths.push(depth + 1);
        }
      }
      continue;
    }
    for (const key in value) {
      const member = (value as Record<string, unknown>)[key];
      if (member !== null && typeof member === 'object') {
        values.push(member);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** The message of the first defect `parsedBodyDefect` looks for, with the path of the field. */
function describeDefect(
  body: unknown,
  options: { maxDepth: number; checkSurrogates: boolean },
): string | undefined {
  const { maxDepth, checkSurrogates } = options;
  if (typeof body === 'string')
    return checkSurrogates && !isWellFormed(body) ? lonelySurrogate('body') : undefined;
  if (body === null || typeof body !== 'object') return undefined;
  const pending: Container[] = [{ value: body, depth: 1, parent: undefined, key: '' }];
  // A member that is a string is checked here; an array or object waits its turn on `pending`.
  const inspect = (container: Container, key: string | number, member: unknown): string | undefined => {
    if (typeof member === 'string') {
      return checkSurrogates && !isWellFormed(member) ? lonelySurrogate(pathOf(container, key)) : undefined;
    }
    if (member !== null && typeof member === 'object') {
      pending.push({ value: member, depth: container.depth + 1, parent: container, key });
    }
    return undefined;
  };
  for (let container = pending.pop(); container !== undefined; container = pending.pop()) {
    if (container.depth > maxDepth) {
      return `${pathOf(container)}: nests deeper than ${maxDepth} levels of arrays and objects, the most a request body may have`;
    }
    const { value } = container;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        const defect = inspect(container, index, value[index]);
        if (defect) return defect;
      }
      continue;
    }
    for (const key in value) {
      if (checkSurrogates && !isWellFormed(key)) {
        return lonelySurrogate(pathOf(container), 'member names must');
      }
      const defect = inspect(container, key, (value as Record<string, unknown>)[key]);
      if (defect) return defect;
    }
  }
  return undefined;
}
