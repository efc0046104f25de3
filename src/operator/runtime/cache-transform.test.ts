import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  composeTransforms,
  LAST_APPLIED_ANNOTATION,
  stripForCache,
  withoutSecretData,
} from './cache-transform.js';

/** An object as the API server sends it after `kubectl apply`, with all a reconcile reads. */
const applied = () => ({
  apiVersion: 'edgeward.dev/v1alpha1',
  kind: 'TLSEdge',
  metadata: {
    name: 'edge',
    namespace: 'ns',
    uid: 'u-1',
    resourceVersion: '42',
    generation: 3,
    labels: { app: 'web' },
    annotations: {
      [LAST_APPLIED_ANNOTATION]: '{"spec":{"hostports":["a.example.com:443"]}}',
      'edgeward.dev/resync-period': '90s',
      'edgeward.dev/adopt-id': 'edg_1',
    },
    finalizers: ['edgeward.dev/finalizer'],
    ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: 'u-0', controller: true }],
    deletionTimestamp: new Date(0),
    managedFields: [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': {} } }],
  },
  spec: { hostports: ['a.example.com:443'], ipRestriction: { ipPolicyRefs: [{ name: 'p' }] } },
  status: { id: 'edg_1', conditions: [{ type: 'Ready', status: 'True' }] },
});

describe('stripForCache', () => {
  it('drops managedFields and the last-applied annotation, and keeps what reconciles read', () => {
    const object = applied();
    const trimmed = stripForCache(object);
    expect(trimmed.metadata.managedFields).toBeUndefined();
    expect(trimmed.metadata.annotations).toEqual({
      'edgeward.dev/resync-period': '90s',
      'edgeward.dev/adopt-id': 'edg_1',
    });
    const { managedFields: _m, annotations: _a, ...keptMetadata } = object.metadata;
    expect(trimmed.metadata).toMatchObject(keptMetadata);
    expect(trimmed.spec).toBe(object.spec);
    expect(trimmed.status).toBe(object.status);
    expect(trimmed.apiVersion).toBe(object.apiVersion);
    expect(trimmed.kind).toBe(object.kind);
  });

  it('never mutates its input (informer handlers may still hold it)', () => {
    const object = applied();
    const copy = structuredClone(object);
    stripForCache(object);
    expect(object).toEqual(copy);
  });

  it('leaves no empty annotations behind, and returns untouched objects as they are', () => {
    const onlyLastApplied: KubernetesObject = {
      metadata: { name: 'a', annotations: { [LAST_APPLIED_ANNOTATION]: '{}' } },
    };
    expect(stripForCache(onlyLastApplied).metadata).toEqual({ name: 'a' });
    const plain: KubernetesObject = { metadata: { name: 'b', annotations: { x: 'y' } } };
    expect(stripForCache(plain)).toBe(plain);
    const bare: KubernetesObject = { kind: 'Secret' };
    expect(stripForCache(bare)).toBe(bare);
  });
});

describe('withoutSecretData', () => {
  it('drops the values of a Secret and keeps who owns it and its version', () => {
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: 't',
        namespace: 'ns',
        resourceVersion: '7',
        ownerReferences: applied().metadata.ownerReferences,
      },
      data: { token: 'c2VjcmV0' },
      stringData: { other: 'x' },
    };
    const trimmed = withoutSecretData(secret);
    expect(trimmed).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: secret.metadata,
    });
    expect(secret.data).toEqual({ token: 'c2VjcmV0' });
  });

  it('composes after the default transform', () => {
    const both = composeTransforms(stripForCache, withoutSecretData);
    const secret = {
      kind: 'Secret',
      metadata: { name: 't', managedFields: [{ manager: 'edgeward' }] },
      data: { token: 'c2VjcmV0' },
    };
    expect(both(secret)).toEqual({ kind: 'Secret', metadata: { name: 't' } });
    expect(composeTransforms(stripForCache, undefined)).toBe(stripForCache);
  });
});
