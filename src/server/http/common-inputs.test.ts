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
  it.each(queries.map((query) => [JSON.stringify(query), query]))(
    'listQuery %s: as zod, or left to zod',
    (_, query) => {
      const quick = quickParserOf(listQuery)?.(query);
      const zod = listQuery.safeParse(query);
      if (quick === undefined) expect(zod.success).toBe(false);
      else expect(quick).toStrictEqual(zod.data);
    },
  );

  it.each(params.map((value) => [JSON.stringify(value), value]))(
    'idParams %s: as zod, or left to zod',
    (_, value) => {
      const quick = quickParserOf(idParams)?.(value);
      const zod = idParams.safeParse(value);
      if (quick === undefined) expect(zod.success).toBe(false);
      else expect(quick).toStrictEqual(zod.data);
    },
  );

  it('has none for other schemas', () => {
    expect(quickParserOf(undefined)).toBeUndefined();
    expect(quickParserOf(listQuery.extend({}))).toBeUndefined();
  });
});
