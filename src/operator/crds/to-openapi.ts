import { z } from 'zod';
import type { ValidationRule } from './cel.js';

/**
 * zod -> the structural OpenAPI v3 schema a CustomResourceDefinition takes.
 *
 * `z.toJSONSchema` (OpenAPI 3.0 target) does most of the work; this pass makes the result
 * acceptable to the apiserver: `$ref`s are inlined, `const` becomes a one-value `enum`,
 * `additionalProperties: false` and `propertyNames` (which Kubernetes forbids or does not know) are
 * dropped — pruning already refuses unknown fields — integers get an int32/int64 format and lose
 * zod's safe-integer bounds, and every node must have a type unless it preserves unknown fields.
 * Anything else Kubernetes cannot take (unions, allOf, unknown keywords) is an error naming the path,
 * so a schema change can never silently weaken a CRD.
 */
export type JsonSchemaProps = {
  description?: string;
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  format?: string;
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  exclusiveMinimum?: boolean;
  maximum?: number;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  required?: string[];
  properties?: Record<string, JsonSchemaProps>;
  additionalProperties?: JsonSchemaProps;
  items?: JsonSchemaProps;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-validations'?: ValidationRule[];
};

type Json = Record<string, unknown>;

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

/** Copied as they are (after the type-specific handling below). */
const PASSED_THROUGH = [
  'description',
  'pattern',
  'minLength',
  'maxLength',
  'multipleOf',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
] as const;

/** Handled explicitly, or meaningless to Kubernetes and dropped. */
const HANDLED = new Set<string>([
  ...PASSED_THROUGH,
  'type',
  'format',
  'enum',
  'const',
  'default',
  'nullable',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'required',
  'properties',
  'additionalProperties',
  'items',
  '$ref',
  // Dropped: not part of a structural schema, or implied by pruning.
  '$schema',
  '$id',
  'id',
  'title',
  'examples',
  'propertyNames',
  '$defs',
  'definitions',
  'readOnly',
  'writeOnly',
]);

/** Output key order: the order a reader expects, stable so the checked-in YAML never churns. */
const KEY_ORDER: readonly (keyof JsonSchemaProps)[] = [
  'description',
  'type',
  'format',
  'enum',
  'default',
  'nullable',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'exclusiveMinimum',
  'maximum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'required',
  'properties',
  'additionalProperties',
  'items',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
];

export class SchemaConversionError extends Error {
  constructor(path: string, problem: string) {
    super(`${path || '<root>'}: ${problem}`);
    this.name = 'SchemaConversionError';
  }
}

/** The structural OpenAPI v3 schema of a zod schema, as a CRD's `openAPIV3Schema` takes it. */
export function toOpenApiSchema(schema: z.ZodType): JsonSchemaProps {
  let json: Json;
  try {
    json = z.toJSONSchema(schema, {
      target: 'openapi-3.0',
      // Input form: fields with a default are optional to whoever writes the object.
      io: 'input',
      unrepresentable: 'throw',
      reused: 'inline',
      cycles: 'throw',
    }) as Json;
  } catch (error) {
    throw new Error(`cannot express the schema as JSON Schema: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const defs = {
    ...((json.$defs as Record<string, Json>) ?? {}),
    ...((json.definitions as Record<string, Json>) ?? {}),
  };
  return convert(json, '', defs);
}

function convert(node: Json, path: string, defs: Record<string, Json>): JsonSchemaProps {
  const resolved = inlineRef(node, path, defs);
  const unwrapped = unwrapNullable(resolved, path);
  for (const key of ['anyOf', 'oneOf', 'allOf', 'not']) {
    if (key in unwrapped) {
      throw new SchemaConversionError(
        path,
        `'${key}' is not used in edgeward CRDs: give one pattern per string, and express alternatives as optional fields with a CEL rule`,
      );
    }
  }
  for (const key of Object.keys(unwrapped)) {
    if (!HANDLED.has(key)) throw new SchemaConversionError(path, `unsupported JSON Schema keyword '${key}'`);
  }

  const out: JsonSchemaProps = {};
  for (const key of PASSED_THROUGH) {
    if (unwrapped[key] !== undefined) (out as Json)[key] = unwrapped[key];
  }
  if (unwrapped.nullable === true) out.nullable = true;
  if (unwrapped.default !== undefined) out.default = unwrapped.default;
  if (unwrapped.format !== undefined) out.format = unwrapped.format as string;

  const enumValues =
    unwrapped.const !== undefined ? [unwrapped.const] : (unwrapped.enum as unknown[] | undefined);
  if (enumValues !== undefined) out.enum = enumValues;

  const preserveUnknown = unwrapped['x-kubernetes-preserve-unknown-fields'] === true;
  const type = typeOf(unwrapped, enumValues, path, preserveUnknown);
  if (type !== undefined) out.type = type;

  if (type === 'integer' || type === 'number') convertBounds(unwrapped, out, type);

  if (type === 'object') {
    const properties = unwrapped.properties as Record<string, Json> | undefined;
    if (properties !== undefined) {
      out.properties = Object.fromEntries(
        Object.entries(properties).map(([name, child]) => [name, convert(child, `${path}.${name}`, defs)]),
      );
      const required = unwrapped.required as string[] | undefined;
      if (required !== undefined && required.length > 0) out.required = required;
    }
    const additional = unwrapped.additionalProperties;
    // `false` is what pruning does anyway; `{}` (anything) only with preserve-unknown-fields.
    if (additional !== undefined && additional !== false && !preserveUnknown) {
      if (additional === true || Object.keys(additional as Json).length === 0) {
        throw new SchemaConversionError(
          path,
          "a free-form object needs 'x-kubernetes-preserve-unknown-fields: true' in its zod meta",
        );
      }
      if (properties !== undefined) {
        throw new SchemaConversionError(
          path,
          'Kubernetes does not allow both properties and additionalProperties',
        );
      }
      out.additionalProperties = convert(additional as Json, `${path}[*]`, defs);
    }
  }
  if (type === 'array') {
    if (unwrapped.items === undefined || Array.isArray(unwrapped.items)) {
      throw new SchemaConversionError(path, 'an array needs one items schema');
    }
    out.items = convert(unwrapped.items as Json, `${path}[]`, defs);
  }

  return ordered(out);
}

function inlineRef(node: Json, path: string, defs: Record<string, Json>): Json {
  // A reference with sibling keywords (an optional or described reused schema) comes as a
  // one-member allOf: merge it, the siblings winning.
  const allOf = node.allOf as Json[] | undefined;
  if (allOf?.length === 1) {
    const { allOf: _allOf, ...siblings } = node;
    return { ...inlineRef(allOf[0] as Json, path, defs), ...siblings };
  }
  const ref = node.$ref;
  if (typeof ref !== 'string') return node;
  const name = ref.replace(/^#\/(\$defs|definitions)\//, '');
  const target = defs[name];
  if (target === undefined) throw new SchemaConversionError(path, `unresolvable $ref '${ref}'`);
  const { $ref: _ref, ...siblings } = node;
  return inlineRef({ ...target, ...siblings }, path, defs);
}

/** `anyOf: [X, {type: null}]` or `type: [X, 'null']` (other targets' ways of saying nullable). */
function unwrapNullable(node: Json, path: string): Json {
  const anyOf = node.anyOf as Json[] | undefined;
  if (anyOf !== undefined) {
    const nonNull = anyOf.filter((member) => member.type !== 'null');
    const hasNull = nonNull.length < anyOf.length || node.nullable === true;
    if (nonNull.length === 1 && hasNull) {
      const { anyOf: _anyOf, nullable: _nullable, ...rest } = node;
      return { ...(nonNull[0] as Json), ...rest, nullable: true };
    }
    throw new SchemaConversionError(
      path,
      "unions ('anyOf') are not structural; use optional fields and a CEL rule",
    );
  }
  if (Array.isArray(node.type)) {
    const types = (node.type as string[]).filter((type) => type !== 'null');
    if (types.length !== 1)
      throw new SchemaConversionError(path, `a field must have one type, not ${node.type}`);
    return { ...node, type: types[0], nullable: types.length < (node.type as string[]).length || undefined };
  }
  return node;
}

function typeOf(
  node: Json,
  enumValues: unknown[] | undefined,
  path: string,
  preserveUnknown: boolean,
): JsonSchemaProps['type'] {
  let type = node.type as string | undefined;
  if (type === undefined && enumValues !== undefined) {
    const kinds = new Set(enumValues.map((value) => typeof value));
    if (kinds.size === 1 && kinds.has('string')) type = 'string';
    else if (kinds.size === 1 && kinds.has('number')) type = 'number';
    else if (kinds.size === 1 && kinds.has('boolean')) type = 'boolean';
  }
  // A numeric enum of whole numbers (RSA key sizes) is an integer field.
  if (type === 'number' && enumValues?.every((value) => Number.isInteger(value))) type = 'integer';
  if (type === undefined) {
    if (preserveUnknown) return undefined;
    throw new SchemaConversionError(
      path,
      "every field needs a type (or 'x-kubernetes-preserve-unknown-fields')",
    );
  }
  if (!['object', 'array', 'string', 'integer', 'number', 'boolean'].includes(type)) {
    throw new SchemaConversionError(path, `unsupported type '${type}'`);
  }
  return type as JsonSchemaProps['type'];
}

/**
 * zod gives every integer its safe-integer range (2^53-1), which says nothing to Kubernetes: those
 * bounds are dropped, and the format says what the field holds (int32 when it fits, else int64).
 * OpenAPI 3.0's boolean exclusive bounds are what Kubernetes expects, and the 3.0 target emits them.
 */
function convertBounds(node: Json, out: JsonSchemaProps, type: 'integer' | 'number'): void {
  const safe = Number.MAX_SAFE_INTEGER;
  let minimum = node.minimum as number | undefined;
  let maximum = node.maximum as number | undefined;
  if (type === 'integer') {
    if (minimum === -safe) minimum = undefined;
    if (maximum === safe) maximum = undefined;
  }
  if (minimum !== undefined) out.minimum = minimum;
  if (node.exclusiveMinimum === true) out.exclusiveMinimum = true;
  if (maximum !== undefined) out.maximum = maximum;
  if (node.exclusiveMaximum === true) out.exclusiveMaximum = true;
  if (typeof node.exclusiveMinimum === 'number' || typeof node.exclusiveMaximum === 'number') {
    throw new Error(
      'numeric exclusive bounds (JSON Schema 2020-12) are not expected from the OpenAPI 3.0 target',
    );
  }
  if (out.format === undefined) {
    const fitsInt32 =
      minimum !== undefined && maximum !== undefined && minimum >= INT32_MIN && maximum <= INT32_MAX;
    const fitsEnum = (out.enum as number[] | undefined)?.every(
      (value) => value >= INT32_MIN && value <= INT32_MAX,
    );
    if (type === 'integer') out.format = fitsInt32 || fitsEnum ? 'int32' : 'int64';
    else out.format = 'double';
  }
}

/** The schema with its keys in the canonical order (for schemas assembled by hand, like the root). */
export function ordered(props: JsonSchemaProps): JsonSchemaProps {
  const out: JsonSchemaProps = {};
  for (const key of KEY_ORDER) {
    if (props[key] !== undefined) (out as Json)[key] = props[key];
  }
  return out;
}
