import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finalizerPolicy, finalizerPolicyBinding } from '../../src/operator/admission/finalizer-policy.js';
import { OPERATOR_KINDS } from '../../src/operator/kinds.js';
import { FINALIZER } from '../../src/operator/runtime/finalizers.js';
import { type Cr, OperatorHarness } from '../support/operator-harness.js';

/*
 * The finalizer admission policy (config/admission, the chart's finalizer-policy.yaml) against the
 * kube-apiserver of the test control plane (1.36: MutatingAdmissionPolicy v1), bound to this file's
 * namespace alone so other files' objects are untouched: new objects arrive with the finalizer, the
 * operator then writes none, and deleting them still cleans up.
 */

const h = new OperatorHarness('finalizer-policy');
const { apply, yamlOf, waitFor, waitGone } = h;
const policyName = `edgeward-finalizer-${h.suffix}`;

/** What admission makes of an IPPolicy, by a server-side dry run: nothing is stored. */
async function admitted(namespace: string, annotations: Record<string, string> = {}): Promise<Cr> {
  const object = JSON.stringify({
    apiVersion: 'edgeward.dev/v1alpha1',
    kind: 'IPPolicy',
    metadata: { name: 'dry-run', namespace, annotations },
    spec: { description: 'dry run' },
  });
  const { stdout } = await h.kubectl(['create', '--dry-run=server', '-o', 'json', '-f', '-'], object);
  return JSON.parse(stdout) as Cr;
}

const kubernetesPatches = () =>
  h.metricSum('edgeward_operator_api_requests_total', { api: 'kubernetes', method: 'PATCH' });

beforeAll(async () => {
  await h.start();
  const policy = finalizerPolicy(OPERATOR_KINDS, policyName);
  const binding = finalizerPolicyBinding(policyName, [h.namespace]);
  await h.kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [policy, binding] }),
  );
  // The operator's metrics are what the first test counts with: wait until they answer.
  await h.eventually('the operator’s metrics', () =>
    kubernetesPatches().then(
      () => true,
      () => undefined,
    ),
  );
  // The API server loads a new policy a moment after it is stored.
  await h.eventually('the finalizer policy in effect', async () =>
    (await admitted(h.namespace)).metadata.finalizers?.includes(FINALIZER) ? true : undefined,
  );
}, 120_000);

afterAll(async () => {
  await h
    .kubectl(['delete', '--ignore-not-found', 'mutatingadmissionpolicybinding', policyName])
    .catch(() => {});
  await h.kubectl(['delete', '--ignore-not-found', 'mutatingadmissionpolicy', policyName]).catch(() => {});
  await h.stop();
});

describe('the finalizer admission policy', () => {
  it('puts the finalizer on at create, so the operator writes only the external-id annotation', {
    timeout: 60_000,
  }, async () => {
    await h.settled();
    const before = await kubernetesPatches();
    const { stdout } = await h.kubectl(
      ['create', '-o', 'json', '-f', '-'],
      yamlOf('IPPolicy', 'admitted', { description: 'finalized at create' }),
    );
    expect((JSON.parse(stdout) as Cr).metadata.finalizers).toEqual([FINALIZER]);
    await waitFor('ippolicies', 'admitted');
    await h.settled();
    // Without the policy: two PATCHes, the finalizer and then the external-id annotation.
    expect((await kubernetesPatches()) - before).toBe(1);
  });

  it('leaves a paused object and other namespaces alone', async () => {
    expect(
      (await admitted(h.namespace, { 'edgeward.dev/paused': 'true' })).metadata.finalizers,
    ).toBeUndefined();
    expect((await admitted('default')).metadata.finalizers).toBeUndefined();
  });

  it('keeps deletion working: the operator deletes the server resource and lets the object go', {
    timeout: 60_000,
  }, async () => {
    await apply(yamlOf('IPPolicy', 'short-lived', { description: 'deleted next' }));
    const ready = await waitFor('ippolicies', 'short-lived');
    expect(ready.metadata.finalizers).toEqual([FINALIZER]);
    const id = ready.status?.id;
    expect(id).toMatch(/^ipp_/);
    await h.kubectl(['delete', '-n', h.namespace, 'ippolicies.edgeward.dev', 'short-lived', '--wait=false']);
    await waitGone('ippolicies', 'short-lived');
    expect((await h.t.api('GET', `/ip_policies/${id}`)).status).toBe(404);
  });
});
