import { describe, expect, it } from 'vitest';
import { nextBatch } from './batches.js';
import type { OutboundRecord } from './targets/delivery-target.js';

/** Counts each record as its body's bytes plus 2, as a target with framing would. */
const target = {
  limits: { maxRecords: 3, maxRecordBytes: 12, maxBatchBytes: 20 },
  recordBytes: (record: OutboundRecord) => Buffer.byteLength(record.body) + 2,
};
const record = (id: string, body: string): OutboundRecord => ({
  deliveryId: id,
  partitionKey: 'k',
  timestampMs: 0,
  body,
});

describe('nextBatch', () => {
  it('takes the longest prefix within the record count', () => {
    const queue = ['a', 'b', 'c', 'd'].map((id) => record(id, 'x'));
    expect(nextBatch(queue, target).batch.map((r) => r.deliveryId)).toEqual(['a', 'b', 'c']);
  });

  it('stops before the byte limit, counting each record as the target does', () => {
    // 8+2 + 8+2 = 20 fits; a third would not.
    const queue = ['a', 'b', 'c'].map((id) => record(id, '12345678'));
    expect(nextBatch(queue, target).batch.map((r) => r.deliveryId)).toEqual(['a', 'b']);
  });

  it('sets aside records the target can never take, without blocking those behind them', () => {
    const queue = [record('a', 'x'), record('big', 'é'.repeat(6)), record('c', 'y')];
    const { batch, oversize } = nextBatch(queue, target);
    expect(batch.map((r) => r.deliveryId)).toEqual(['a', 'c']);
    expect(oversize).toEqual([{ record: queue[1], bytes: 14 }]);
  });
});
