import { describe, expect, it } from 'vitest';
import { idParams, listQuery } from '../../schemas/common.js';
import { listQueryOf } from '../routes/collection-reads.js';
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

// A collection's list query with a filter, built as its list route builds it.
const filteredQuery = listQueryOf<'ip_policy_rules'>('ipr', [
  { param: 'ip_policy_id', column: 'ip_policy_id', description: 'only the rules of this IP policy' },
]);
const filteredQueries: unknown[] = [
  ...queries,
  { ip_policy_id: 'ipp_2abc' },
  { limit: '5', ip_policy_id: 'ipp_2abc', before_id: 'ipr_1' },
  { before_id: 'ipr_' },
  { before_id: 'ipr_a-b' },
  { before_id: 'ipr_2abc\n' },
  { before_id: 'xipr_2abc' },
  { ip_policy_id: '' },
  { ip_policy_id: ['a', 'b'] },
  { ip_policy_id: 'ipp_2abc', other: 'x' },
];

describe('the precompiled checks of ids and paging', () => {
  const cases = [
    ...queries.map((value) => ['listQuery', listQuery, value] as const),
    ...filteredQueries.map((value) => ['filtered listQuery', filteredQuery, value] as const),
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

  it('covers every list route, filtered or not', () => {
    expect(quickParserOf(listQueryOf('ipp'))).toBeDefined();
    expect(quickParserOf(filteredQuery)).toBeDefined();
    // A cursor of another list is left to zod, which refuses it.
    expect(quickParserOf(filteredQuery)?.({ before_id: 'ipp_1' })).toBeUndefined();
    // Filtered inputs reach the handler parsed, not left to zod.
    expect(quickParserOf(filteredQuery)?.({ ip_policy_id: 'ipp_1', limit: '3' })).toStrictEqual({
      limit: 3,
      ip_policy_id: 'ipp_1',
    });
  });
});
