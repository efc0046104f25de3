import type { JsonPatchOperation } from '../../../src/operator/runtime/resource-client.js';
import { sameJson } from '../../../src/operator/runtime/same-json.js';

/** Why a JSON patch cannot be applied (a failed `test`, a path that is not there): a 422. */
export class JsonPatchError extends Error {}

type Container = Record<string, unknown> | unknown[];

/** RFC 6902 on a copy of `document`: add, remove, replace, test (what the operator sends). */
export function applyJsonPatch<T>(document: T, operations: readonly JsonPatchOperation[]): T {
  const root: { value: unknown } = { value: structuredClone(document) };
  for (const operation of operations) {
    const tokens = parsePointer(operation.path);
    const last = tokens.pop();
    const parent = last === undefined ? undefined : resolve(root.value, tokens, operation.path);
    switch (operation.op) {
      case 'test': {
        const actual = last === undefined ? root.value : read(parent, last);
        if (!sameJson(actual, operation.value)) {
          throw new JsonPatchError(`test of ${operation.path} failed: ${JSON.stringify(actual)}`);
        }
        break;
      }
      case 'add':
        if (last === undefined) root.value = structuredClone(operation.value);
        else add(parent, last, structuredClone(operation.value), operation.path);
        break;
      case 'replace':
        if (last === undefined) root.value = structuredClone(operation.value);
        else {
          remove(parent, last, operation.path);
          add(parent, last, structuredClone(operation.value), operation.path);
        }
        break;
      case 'remove':
        if (last === undefined) throw new JsonPatchError('cannot remove the whole document');
        remove(parent, last, operation.path);
        break;
    }
  }
  return root.value as T;
}

/** RFC 7386: null deletes a member, objects merge, anything else replaces. */
export function applyMergePatch<T>(document: T, patch: Record<string, unknown>): T {
  return merge(structuredClone(document), patch) as T;
}

function merge(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = merge(result[key], value);
  }
  return result;
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new JsonPatchError(`${pointer}: not a JSON pointer`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function resolve(value: unknown, tokens: string[], path: string): Container {
  let current = value;
  for (const token of tokens) current = read(current, token);
  if (!isObject(current) && !Array.isArray(current)) throw new JsonPatchError(`${path}: no such parent`);
  return current;
}

function read(container: unknown, token: string): unknown {
  if (Array.isArray(container)) return container[Number(token)];
  return isObject(container) ? container[token] : undefined;
}

function add(parent: Container | undefined, token: string, value: unknown, path: string): void {
  if (Array.isArray(parent)) {
    const index = token === '-' ? parent.length : Number(token);
    if (!Number.isInteger(index) || index < 0 || index > parent.length) {
      throw new JsonPatchError(`${path}: index out of range`);
    }
    parent.splice(index, 0, value);
  } else if (parent) {
    parent[token] = value;
  }
}

function remove(parent: Container | undefined, token: string, path: string): void {
  if (Array.isArray(parent)) {
    const index = Number(token);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length) {
      throw new JsonPatchError(`${path}: index out of range`);
    }
    parent.splice(index, 1);
  } else if (parent && token in parent) {
    delete parent[token];
  } else {
    throw new JsonPatchError(`${path}: no such member`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}
