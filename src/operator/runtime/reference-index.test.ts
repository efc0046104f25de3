import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ReferenceIndex } from './reference-index.js';

type Edge = KubernetesObject & {
  spec: { ipPolicyRefs?: Array<{ name: string }>; secretName?: string };
};

const edge = (namespace: string, name: string, spec: Edge['spec']): Edge => ({
  apiVersion: 'edgeward.dev/v1alpha1',
  kind: 'TLSEdge',
  metadata: { namespace, name },
  spec,
});

const index = () =>
  new ReferenceIndex<Edge>((object) => [
    ...(object.spec.ipPolicyRefs ?? []).map((ref) => ({ kind: 'IPPolicy', name: ref.name })),
    ...(object.spec.secretName ? [{ kind: 'Secret', name: object.spec.secretName }] : []),
  ]);

describe('ReferenceIndex', () => {
  it('finds the referrers of a referenced object, in the referrer namespace by default', () => {
    const refs = index();
    refs.observe(edge('a', 'one', { ipPolicyRefs: [{ name: 'office' }, { name: 'vpn' }] }));
    refs.observe(edge('a', 'two', { ipPolicyRefs: [{ name: 'office' }], secretName: 'tls' }));
    refs.observe(edge('b', 'three', { ipPolicyRefs: [{ name: 'office' }] }));
    expect(refs.referrersOf({ kind: 'IPPolicy', namespace: 'a', name: 'office' })).toEqual([
      'a/one',
      'a/two',
    ]);
    expect(refs.referrersOf({ kind: 'IPPolicy', namespace: 'b', name: 'office' })).toEqual(['b/three']);
    expect(refs.referrersOf({ kind: 'IPPolicy', namespace: 'a', name: 'vpn' })).toEqual(['a/one']);
    expect(refs.referrersOf({ kind: 'Secret', namespace: 'a', name: 'tls' })).toEqual(['a/two']);
    // Same name, other kind: no match.
    expect(refs.referrersOf({ kind: 'Secret', namespace: 'a', name: 'office' })).toEqual([]);
  });

  it('follows updates: a dropped reference stops matching, a new one starts', () => {
    const refs = index();
    refs.observe(edge('a', 'one', { ipPolicyRefs: [{ name: 'office' }] }));
    refs.observe(edge('a', 'one', { ipPolicyRefs: [{ name: 'vpn' }] }));
    expect(refs.referrersOf({ kind: 'IPPolicy', namespace: 'a', name: 'office' })).toEqual([]);
    expect(refs.referrersOf({ kind: 'IPPolicy', namespace: 'a', name: 'vpn' })).toEqual(['a/one']);
    expect(refs.referencesOf('a/one')).toEqual([{ kind: 'IPPolicy', namespace: 'a', name: 'vpn' }]);
    expect(refs.size).toBe(1);
  });

  it('forgets a deleted referrer entirely', () => {
    const refs = index();
    refs.observe(edge('a', 'one', { ipPolicyRefs: [{ name: 'office' }], secretName: 'tls' }));
    refs.observe(edge('a', 'two', { ipPolicyRefs: [{ name: 'office' }] }));
    refs.forget('a/one');
    expect(refs.referrersOf({ kind: 'IPPolicy', namespace: 'a', name: 'office' })).toEqual(['a/two']);
    expect(refs.referrersOf({ kind: 'Secret', namespace: 'a', name: 'tls' })).toEqual([]);
    expect(refs.referencesOf('a/one')).toEqual([]);
    refs.forget('a/two');
    expect(refs.size).toBe(0);
  });

  it('honours an explicit namespace in a reference', () => {
    const refs = new ReferenceIndex<Edge>(() => [{ kind: 'Secret', namespace: 'shared', name: 'ca' }]);
    refs.observe(edge('a', 'one', {}));
    expect(refs.referrersOf({ kind: 'Secret', namespace: 'shared', name: 'ca' })).toEqual(['a/one']);
    expect(refs.referrersOf({ kind: 'Secret', namespace: 'a', name: 'ca' })).toEqual([]);
  });
});
