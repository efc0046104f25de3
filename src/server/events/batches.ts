import type { DeliveryTarget, OutboundRecord } from './targets/delivery-target.js';

/**
 * The next call's records: the longest prefix of the queue that fits the target's limits, in
 * order, counting each record as the target does. Records too large for the target to ever take
 * are set aside as undeliverable (they do not block the queue behind them).
 */
export function nextBatch(
  queue: OutboundRecord[],
  target: Pick<DeliveryTarget, 'limits' | 'recordBytes'>,
): { batch: OutboundRecord[]; oversize: { record: OutboundRecord; bytes: number }[] } {
  const { limits } = target;
  const batch: OutboundRecord[] = [];
  const oversize: { record: OutboundRecord; bytes: number }[] = [];
  let bytes = 0;
  for (const record of queue) {
    const cost = target.recordBytes(record);
    if (cost > limits.maxRecordBytes) {
      oversize.push({ record, bytes: cost });
      continue;
    }
    if (batch.length >= limits.maxRecords || bytes + cost > limits.maxBatchBytes) break;
    batch.push(record);
    bytes += cost;
  }
  return { batch, oversize };
}
