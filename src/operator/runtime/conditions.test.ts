import { describe, expect, it } from 'vitest';
import { type Condition, ConditionType, getCondition, isConditionTrue, setCondition } from './conditions.js';

const at = (iso: string) => () => new Date(iso);

describe('conditions', () => {
  it('stamps observedGeneration and a transition time on a new condition', () => {
    const conditions = setCondition(
      undefined,
      { type: ConditionType.Ready, status: 'True', reason: 'Reconciled', message: 'created edgtls_1' },
      { observedGeneration: 3, now: at('2026-01-02T03:04:05.678Z') },
    );
    expect(conditions).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'Reconciled',
        message: 'created edgtls_1',
        lastTransitionTime: '2026-01-02T03:04:05Z',
        observedGeneration: 3,
      },
    ]);
  });

  it('keeps lastTransitionTime while the status stays, even when reason, message and generation change', () => {
    const first = setCondition(
      undefined,
      { type: 'Ready', status: 'False', reason: 'ApiError', message: 'server said 503' },
      { observedGeneration: 1, now: at('2026-01-01T00:00:00Z') },
    );
    const second = setCondition(
      first,
      { type: 'Ready', status: 'False', reason: 'InvalidReference', message: 'ipPolicyRefs[0]: not found' },
      { observedGeneration: 2, now: at('2026-01-01T00:05:00Z') },
    );
    expect(getCondition(second, 'Ready')).toEqual({
      type: 'Ready',
      status: 'False',
      reason: 'InvalidReference',
      message: 'ipPolicyRefs[0]: not found',
      lastTransitionTime: '2026-01-01T00:00:00Z',
      observedGeneration: 2,
    });
    const third = setCondition(
      second,
      { type: 'Ready', status: 'True', reason: 'Reconciled' },
      { observedGeneration: 2, now: at('2026-01-01T00:09:00Z') },
    );
    expect(getCondition(third, 'Ready')?.lastTransitionTime).toBe('2026-01-01T00:09:00Z');
    expect(isConditionTrue(third, 'Ready')).toBe(true);
    // The input lists are not modified.
    expect(first[0]?.reason).toBe('ApiError');
    expect(second[0]?.status).toBe('False');
  });

  it('leaves other conditions as they are, in their order', () => {
    const synced: Condition = {
      type: 'Synced',
      status: 'True',
      reason: 'Synced',
      message: '',
      lastTransitionTime: '2025-12-31T00:00:00Z',
      observedGeneration: 1,
    };
    const ready = { ...synced, type: 'Ready', reason: 'Reconciled' };
    const next = setCondition(
      [ready, synced],
      { type: 'Ready', status: 'Unknown', reason: 'Pending' },
      { observedGeneration: 2, now: at('2026-01-01T00:00:00Z') },
    );
    expect(next.map((condition) => condition.type)).toEqual(['Ready', 'Synced']);
    expect(next[1]).toBe(synced);
    expect(next[0]?.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
  });

  it('refuses reasons that are not CamelCase', () => {
    for (const reason of ['api error', 'apiError', 'API_ERROR', '', 'Not-Found']) {
      expect(() =>
        setCondition(undefined, { type: 'Ready', status: 'False', reason }, { observedGeneration: 1 }),
      ).toThrow(/CamelCase/);
    }
  });

  it('redacts secrets from messages', () => {
    const [condition] = setCondition(
      undefined,
      {
        type: 'Synced',
        status: 'False',
        reason: 'ApiError',
        message: 'rejected {"client_secret": "hunter2"}',
      },
      { observedGeneration: 1 },
    );
    expect(condition?.message).not.toContain('hunter2');
    expect(condition?.message).toContain('[REDACTED]');
  });
});
