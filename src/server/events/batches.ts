import { byteLength, type OutboundRecord, type TargetLimits } from './targets/delivery-target.js';

/**
 * The next call's records: the longest prefix of the queue that fits the target's limits, in
 * order. Records too large for the target to ever take are set aside as undeliverable (they do
 * not block the queue behind them).
 */
export function nextBatch(
  queue: OutboundRecord[],
  limits: TargetLimits,
): { batch: OutboundRecord[]; oversize: { record: OutboundRecord; bytes: number }[] } {
  const batch: OutboundRecord[] = [];
  const oversize: { record: OutboundRecord; bytes: number }[] = [];
  let bytes = 0;
  for (const record of queue) {
    const size = byteLength(record.body);
    if (size > limits.maxRecordBytes) {
      oversize.push({ record, bytes: size });
      continue;
    }
    const cost = size + limits.recordOverheadBytes;
    if (batch.length >= limits.maxRecords || bytes + cost > limits.maxBatchBytes) break;
    batch.push(record);
    bytes += cost;
  }
  return { batch, oversize };
}
