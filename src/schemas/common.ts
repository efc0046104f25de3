import { z } from 'zod';

const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');

/** `description`: max 255 bytes (UTF-8), per the Limits of the spec (src/schemas/SPEC.md). */
export const description = z
  .string()
  .refine((s) => byteLength(s) <= 255, 'must be at most 255 bytes')
  .meta({ description: 'human-readable description, at most 255 bytes' });

/** `metadata`: max 4096 bytes; callers usually store serialized JSON. */
export const metadata = z
  .string()
  .refine((s) => byteLength(s) <= 4096, 'must be at most 4096 bytes')
  .meta({ description: 'arbitrary machine-readable data, at most 4096 bytes' });

/** Event subscriptions count characters (code points), not bytes. */
export const descriptionChars = z
  .string()
  .refine((s) => [...s].length <= 255, 'must be at most 255 characters')
  .meta({ description: 'human-readable description, at most 255 characters' });
export const metadataChars = z
  .string()
  .refine((s) => [...s].length <= 4096, 'must be at most 4096 characters')
  .meta({ description: 'arbitrary machine-readable data, at most 4096 characters' });

export const timestamp = z.string().meta({ description: 'RFC 3339 timestamp, UTC', format: 'date-time' });

/** Read form of the fields most resources share; spread first into `z.object({...})`. */
export const describedResourceFields = {
  id: z.string(),
  uri: z.string(),
  created_at: timestamp,
  description: z.string(),
  metadata: z.string(),
};

/** Optional `description` and `metadata` of a create or update body; spread into `z.strictObject({...})`. */
export const describedInputFields = {
  description: description.optional(),
  metadata: metadata.optional(),
};

/** As `describedInputFields`, with the character-counted limits event subscriptions use. */
export const describedInputFieldsChars = {
  description: descriptionChars.optional(),
  metadata: metadataChars.optional(),
};

export const ref = z.object({ id: z.string(), uri: z.string() }).meta({ id: 'Ref' });
export type Ref = z.infer<typeof ref>;

/** A server id of a given prefix, e.g. `ipp_`. The 27-character suffix is not checked: unknown ids are 404s. */
export function resourceId(prefix: string) {
  return z
    .string()
    .regex(new RegExp(`^${prefix}_[0-9A-Za-z]{1,64}$`), `must be an id starting with '${prefix}_'`);
}

export const idParams = z.strictObject({ id: z.string().min(1) });

export const listQuery = z.strictObject({
  limit: z
    .string()
    .regex(/^[1-9]\d{0,2}$/, 'must be a whole number from 1 to 100')
    .transform(Number)
    .pipe(z.number().max(100, 'must be a whole number from 1 to 100'))
    .default(100)
    .meta({ description: 'page size, 1..100' }),
  before_id: z.string().min(1).optional().meta({ description: 'return items created before this id' }),
});
export type ListQuery = z.infer<typeof listQuery>;

/** `{<key>: [...], uri, next_page_uri}`: the envelope of every list response. */
export function listOf<K extends string, T extends z.ZodType>(key: K, item: T) {
  const list = z.object({
    [key]: z.array(item),
    uri: z.string(),
    next_page_uri: z.string().nullable(),
  } as { [P in K]: z.ZodArray<T> } & { uri: z.ZodString; next_page_uri: z.ZodNullable<z.ZodString> });
  // A named item makes a named list (`IPPolicy` -> `IPPolicyList`), so generated clients get that name.
  const itemId = z.globalRegistry.get(item)?.id;
  return itemId ? list.meta({ id: `${itemId}List` }) : list;
}

/**
 * JSON Schema of "exactly one of these members is set (not null)", for the document: zod checks it
 * in a refinement, which JSON Schema cannot see.
 */
export function exactlyOneOf(members: readonly string[]): Record<string, unknown>[] {
  return members.map((member) => ({ required: [member], properties: { [member]: { type: 'object' } } }));
}

/**
 * Module fields as an update takes them: the handler refuses `null` there (a module is removed with
 * its DELETE), so the document says so; creates take the same fields with `null` meaning "unset".
 */
export function modulesInUpdate<T extends Record<string, z.ZodType>>(fields: T): T {
  return Object.fromEntries(
    Object.entries(fields).map(([name, field]) => [
      name,
      field.meta({ not: { type: 'null' }, description: `${name}: replaces the module; null is refused` }),
    ]),
  ) as T;
}

/** JSON Schema's `if`/`then`, for the document's statement of a conditional rule zod refines. */
export function ifThen(condition: Record<string, unknown>, consequence: Record<string, unknown>) {
  // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword, never awaited
  return { if: condition, then: consequence };
}

/** Body of agent commands and other endpoints that take an empty object. */
export const emptyBody = z.strictObject({});

export const errorBody = z
  .object({
    error_code: z
      .string()
      .regex(/^ERR_EDGEWARD_\d{3}$/)
      .meta({ description: 'stable code; docs/api.md lists them' }),
    status_code: z.number().int().min(400).max(599).meta({ description: 'the HTTP status, repeated' }),
    msg: z.string().meta({ description: 'what went wrong, starting with the field it concerns' }),
    details: z.object({
      operation_id: z.string().meta({ description: 'the Svc-Operation-Id of the request' }),
      resource_id: z
        .string()
        .optional()
        .meta({
          description:
            "ERR_EDGEWARD_500 only: the id of the resource the Idempotency-Key's first request made, so a " +
            'client whose first answer was lost can find it',
        }),
    }),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof errorBody>;
