import { afterAll, beforeAll, expect, it } from 'vitest';
import { GATEWAY_CONTROLLER_NAME } from '../../src/operator/controllers/gateway-class/status.js';
import { type Condition, OperatorHarness } from '../support/operator-harness.js';

/**
 * The GatewayClass controller, end to end: the Gateway API CRDs (experimental channel, applied by
 * the global setup) and `edgeward operator` as a process. Two GatewayClasses with names of this
 * file (they are cluster-scoped and the other files' operators see them too): ours, naming
 * edgeward.dev/gateway-controller, becomes Accepted (and SupportedVersion: the CRDs are v1.6.3)
 * for its generation, and for the next one after an edit of its spec; the other, naming another
 * controller, keeps the status the CRD defaulted (Accepted Unknown, Pending).
 */

const h = new OperatorHarness('gateway-class');
const { eventually, kubectl, suffix } = h;
const OURS = `edgeward-${suffix}`;
const OTHER = `other-${suffix}`;

interface GatewayClass {
  metadata: { generation: number };
  status?: { conditions?: Condition[] };
}

const gatewayClass = (name: string, controllerName: string, description: string) =>
  JSON.stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name },
    spec: { controllerName, description },
  });

const getClass = async (name: string) =>
  JSON.parse((await kubectl(['get', 'gatewayclass', name, '-o', 'json'])).stdout) as GatewayClass;

/** The class once Accepted and SupportedVersion are True for its current generation. */
const acceptedAtGeneration = (name: string) =>
  eventually(`GatewayClass ${name} Accepted for its generation`, async () => {
    const current = await getClass(name);
    const generation = current.metadata.generation;
    const ok = (type: string) =>
      current.status?.conditions?.some(
        (c) => c.type === type && c.status === 'True' && c.observedGeneration === generation,
      );
    return ok('Accepted') && ok('SupportedVersion') ? current : undefined;
  });

beforeAll(async () => {
  // The harness runs its operators with --gateway-api off: this file's is the one that runs it.
  await h.start({ operatorArgs: async () => ['--gateway-api', 'auto'] });
  await kubectl(['apply', '-f', '-'], gatewayClass(OTHER, 'example.com/gateway-controller', 'not ours'));
}, 120_000);

afterAll(async () => {
  await kubectl(['delete', 'gatewayclass', OURS, OTHER, '--ignore-not-found', '--wait=false']).catch(
    () => {},
  );
  await h.stop();
}, 60_000);

it('accepts a GatewayClass of its controller name for each generation and leaves the others alone', async () => {
  await kubectl(['apply', '-f', '-'], gatewayClass(OURS, GATEWAY_CONTROLLER_NAME, 'tunnels to the edge'));
  const first = await acceptedAtGeneration(OURS);
  expect(first.status?.conditions?.find((c) => c.type === 'Accepted')).toMatchObject({
    reason: 'Accepted',
    observedGeneration: 1,
  });
  expect(first.status?.conditions?.find((c) => c.type === 'SupportedVersion')?.reason).toBe(
    'SupportedVersion',
  );

  await kubectl(['apply', '-f', '-'], gatewayClass(OURS, GATEWAY_CONTROLLER_NAME, 'edited'));
  const second = await acceptedAtGeneration(OURS);
  expect(second.metadata.generation).toBe(2);

  // Created before ours, so the operator has seen it: still only the CRD's default condition.
  const other = await getClass(OTHER);
  expect(other.status?.conditions).toEqual([
    expect.objectContaining({ type: 'Accepted', status: 'Unknown', reason: 'Pending' }),
  ]);
}, 30_000);
