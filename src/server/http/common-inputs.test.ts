import { describe, expect, it } from 'vitest';
import { idParams, listQuery } from '../../schemas/common.js';
import { quickParserOf } from './common-inputs.js';

const queries: unknown[] = [
  {},
  { limit: '1' },
  { limit: '20' },
  { limit: '100' },
  { limit: '101' },
  { limit: '999' },
  { limit: '0' },
  { limit: '007' },
  { limit: '' },
  { limit: ' 5' },
  { limit: ['1', '2'] },
  { before_id: 'ipp_2abc' },
  { before_id: '' },
  { limit: '5', before_id: 'ipp_2abc' },
  { limit: '5', other: 'x' },
  null,
  'limit=5',
];

const params: unknown[] = [{ id: 'ipp_2abc' }, { id: '' }, { id: 5 }, {}, { id: 'a', other: 'b' }, null];

describe('the precompiled checks of ids and paging', () => {
  const cases = [
    ...queries.map((value) => ['listQuery', listQuery, value] as const),
    ...params.map((value) => ['idParams', idParams, value] as const),
  ].map(([name, schema, value]) => [`${name} ${JSON.stringify(value)}`, schema, value] as const);

  it.each(cases)('%s: as zod, or left to zod', (_, schema, value) => {
    const quick = quickParserOf(schema)?.(value);
    const zod = schema.safeParse(value);
    if (quick === undefined) expect(zod.success).toBe(false);
    else expect(quick).toStrictEqual(zod.data);
  });

  it('has none for other schemas', () => {
    expect(quickParserOf(undefined)).toBeUndefined();
    expect(quickParserOf(listQuery.extend({}))).toBeUndefined();
  });
});
