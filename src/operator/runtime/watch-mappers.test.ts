import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { referenceStateChanged, specOrMetadataChanged } from './watch-mappers.js';

function policy(change: {
  generation?: number;
  id?: string;
  ready?: string;
  reason?: string;
  deleting?: boolean;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}): KubernetesObject {
  return {
    metadata: {
      name: 'office',
      generation: change.generation ?? 1,
      labels: change.labels,
      annotations: change.annotations,
      ...(change.deleting ? { deletionTimestamp: new Date('2026-11-22T00:00:00Z') } : {}),
    },
    status: {
      id: change.id,
      conditions: change.ready
        ? [{ type: 'Ready', status: change.ready, reason: change.reason ?? 'Created' }]
        : [],
    },
  } as KubernetesObject;
}

describe('referenceStateChanged (updates of a referenced kind)', () => {
  const base = policy({ id: 'ipp_1', ready: 'True' });

  it('passes a new server id, a Ready flip and a deletion', () => {
    expect(referenceStateChanged(policy({}), base)).toBe(true);
    expect(referenceStateChanged(base, policy({ id: 'ipp_2', ready: 'True' }))).toBe(true);
    expect(referenceStateChanged(base, policy({ id: 'ipp_1', ready: 'False' }))).toBe(true);
    expect(referenceStateChanged(base, policy({ id: 'ipp_1', ready: 'True', deleting: true }))).toBe(true);
  });

  it('drops status rewrites and spec changes that keep the id and readiness', () => {
    expect(referenceStateChanged(base, policy({ id: 'ipp_1', ready: 'True', reason: 'Updated' }))).toBe(
      false,
    );
    expect(referenceStateChanged(base, policy({ id: 'ipp_1', ready: 'True', generation: 2 }))).toBe(false);
  });

  it('passes every update of kinds without a generation (Secrets: their data is what is used)', () => {
    const secret = (value: string) =>
      ({ metadata: { name: 's' }, data: { token: value } }) as KubernetesObject;
    expect(referenceStateChanged(secret('a'), secret('b'))).toBe(true);
  });
});

describe('specOrMetadataChanged (updates of the controller own kind)', () => {
  it('passes annotation changes, except the external-id the operator mirrors status.id into', () => {
    const base = policy({ id: 'ipp_1', annotations: { 'edgeward.dev/paused': 'false' } });
    const mirrored = policy({
      id: 'ipp_1',
      annotations: { 'edgeward.dev/paused': 'false', 'edgeward.dev/external-id': 'ipp_1' },
    });
    expect(specOrMetadataChanged(base, mirrored)).toBe(false);
    expect(
      specOrMetadataChanged(
        mirrored,
        policy({ id: 'ipp_1', annotations: { 'edgeward.dev/paused': 'true' } }),
      ),
    ).toBe(true);
    expect(
      specOrMetadataChanged(base, policy({ id: 'ipp_1', annotations: { 'edgeward.dev/paused': 'true' } })),
    ).toBe(true);
  });

  it('passes spec and metadata changes, not status-only ones', () => {
    const base = policy({ id: 'ipp_1', ready: 'True' });
    expect(specOrMetadataChanged(base, policy({ id: 'ipp_1', ready: 'False' }))).toBe(false);
    expect(specOrMetadataChanged(base, policy({ id: 'ipp_1', ready: 'True', generation: 2 }))).toBe(true);
    expect(specOrMetadataChanged(base, policy({ id: 'ipp_1', ready: 'True', labels: { a: 'b' } }))).toBe(
      true,
    );
  });

  it('ignores our own finalizer being added (the reconcile in progress did it), not other finalizer changes', () => {
    const withFinalizers = (finalizers: string[]) =>
      ({ metadata: { name: 'office', generation: 1, finalizers } }) as KubernetesObject;
    expect(specOrMetadataChanged(withFinalizers([]), withFinalizers(['edgeward.dev/finalizer']))).toBe(false);
    expect(
      specOrMetadataChanged(withFinalizers(['a']), withFinalizers(['a', 'edgeward.dev/finalizer'])),
    ).toBe(false);
    expect(specOrMetadataChanged(withFinalizers(['edgeward.dev/finalizer']), withFinalizers([]))).toBe(true);
    expect(specOrMetadataChanged(withFinalizers([]), withFinalizers(['other.io/finalizer']))).toBe(true);
  });
});
