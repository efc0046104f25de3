import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exactlyOne, immutable, withRules } from './cel.js';
import { toOpenApiSchema } from './to-openapi.js';

describe('toOpenApiSchema', () => {
  it('turns zod into the structural subset Kubernetes takes', () => {
    const schema = z.strictObject({
      name: z
        .string()
        .min(1)
        .max(10)
        .regex(/^[a-z]+$/)
        .meta({ description: 'the name' }),
      count: z.int().min(0).max(100).optional(),
      big: z.int().optional(),
      size: z.int().min(0).max(4_294_967_295).optional(),
      ratio: z.number().min(0).max(1).optional(),
      bits: z.literal([2048, 4096]).optional(),
      at: z.literal('edge').optional(),
      mode: z.enum(['a', 'b']).default('a'),
      note: z.string().max(5).nullable().optional(),
      labels: z.record(z.string(), z.string().max(3)).optional().meta({ maxProperties: 2 }),
      config: z
        .record(z.string(), z.unknown())
        .optional()
        .meta({ 'x-kubernetes-preserve-unknown-fields': true }),
    });
    expect(toOpenApiSchema(schema)).toEqual({
      type: 'object',
      required: ['name'],
      properties: {
        name: { description: 'the name', type: 'string', pattern: '^[a-z]+$', minLength: 1, maxLength: 10 },
        count: { type: 'integer', format: 'int32', minimum: 0, maximum: 100 },
        big: { type: 'integer', format: 'int64' },
        size: { type: 'integer', format: 'int64', minimum: 0, maximum: 4_294_967_295 },
        ratio: { type: 'number', format: 'double', minimum: 0, maximum: 1 },
        bits: { type: 'integer', format: 'int32', enum: [2048, 4096] },
        at: { type: 'string', enum: ['edge'] },
        mode: { type: 'string', enum: ['a', 'b'], default: 'a' },
        note: { type: 'string', nullable: true, maxLength: 5 },
        labels: { type: 'object', maxProperties: 2, additionalProperties: { type: 'string', maxLength: 3 } },
        config: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      },
    });
  });

  it('inlines schemas registered with an id instead of referencing them', () => {
    const shared = z.object({ id: z.string().max(5) }).meta({ id: 'Shared' });
    const schema = z.object({ first: shared, second: shared.optional() });
    const converted = toOpenApiSchema(schema);
    expect(JSON.stringify(converted)).not.toContain('$ref');
    expect(converted.properties?.second).toEqual({
      type: 'object',
      required: ['id'],
      properties: { id: { type: 'string', maxLength: 5 } },
    });
  });

  it('carries CEL rules from zod metadata, appending rather than replacing', () => {
    const schema = withRules(
      withRules(
        z.object({ a: z.string().max(1).optional(), b: z.string().max(1).optional() }),
        exactlyOne('a', 'b'),
      ),
      immutable('a'),
    );
    expect(toOpenApiSchema(schema)['x-kubernetes-validations']).toEqual([
      { rule: 'has(self.a) != has(self.b)', message: 'exactly one of a or b must be set' },
      {
        rule: 'has(self.a) == has(oldSelf.a) && (!has(self.a) || self.a == oldSelf.a)',
        message: 'a is immutable',
        fieldPath: '.a',
      },
    ]);
    expect(exactlyOne('a', 'b', 'c')).toEqual({
      rule: '[has(self.a), has(self.b), has(self.c)].filter(set, set).size() == 1',
      message: 'exactly one of a, b, c must be set',
    });
  });

  it('refuses what is not structural, naming the path', () => {
    expect(() => toOpenApiSchema(z.object({ u: z.union([z.string(), z.number()]) }))).toThrow(/^\.u: unions/);
    expect(() => toOpenApiSchema(z.object({ p: z.string().regex(/a/).regex(/b/) }))).toThrow(/^\.p: 'allOf'/);
    expect(() => toOpenApiSchema(z.object({ free: z.record(z.string(), z.unknown()) }))).toThrow(
      /^\.free: a free-form object needs 'x-kubernetes-preserve-unknown-fields: true'/,
    );
    expect(() => toOpenApiSchema(z.object({ any: z.unknown() }))).toThrow(/^\.any: every field needs a type/);
  });
});
