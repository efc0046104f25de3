import type { EventEnvelope } from '../../../src/schemas/event-delivery.js';
import {
  BatchTooLargeError,
  type DeliveryTarget,
  type OutboundRecord,
  type RecordResult,
  type TargetLimits,
} from '../../../src/server/events/targets/delivery-target.js';

/** How the fake answers one call: per-record results, or a thrown failure of the whole call. */
export type FakeAnswer = (records: OutboundRecord[], call: number) => RecordResult[];

/**
 * A delivery target in memory, for what real targets do rarely and on their own terms: refusing
 * some records of a call, refusing one for good, answering 413. It keeps what it accepted, in order.
 */
export class FakeDeliveryTarget implements DeliveryTarget {
  readonly kind = 'fake';
  readonly accepted: EventEnvelope[] = [];
  readonly callSizes: number[] = [];

  constructor(
    readonly limits: TargetLimits,
    private readonly answer: FakeAnswer = (records) => records.map(() => ({ accepted: true })),
  ) {}

  recordBytes(record: OutboundRecord): number {
    return Buffer.byteLength(record.body);
  }

  async send(records: OutboundRecord[]): Promise<RecordResult[]> {
    this.callSizes.push(records.length);
    const results = this.answer(records, this.callSizes.length);
    records.forEach((record, index) => {
      if (results[index]?.accepted) this.accepted.push(JSON.parse(record.body) as EventEnvelope);
    });
    return results;
  }

  close(): void {}
}

/** A 413 for any call of more than `most` records, as an intake with a smaller limit than documented. */
export function tooLargeAbove(most: number): FakeAnswer {
  return (records) => {
    if (records.length > most) throw new BatchTooLargeError(`413 for ${records.length} records`);
    return records.map(() => ({ accepted: true }));
  };
}
