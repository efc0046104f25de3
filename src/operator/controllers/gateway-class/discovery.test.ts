import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { KubeApi } from '../../runtime/kube-api.js';
import type { Logger } from '../../runtime/logger.js';
import { discoverGatewayApi } from './discovery.js';

/** A KubeApi answering GET paths from a table (an ApiException for a number). */
function fakeApi(answers: Record<string, unknown>): KubeApi {
  return {
    async request(_method: string, path: string) {
      const answer = answers[path];
      if (typeof answer === 'number') throw new ApiException(answer, 'failed', '{}', {});
      return answer;
    },
  } as unknown as KubeApi;
}

function recordingLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = {
    info: (_fields: unknown, message: string) => lines.push(`info ${message}`),
    warn: (_fields: unknown, message: string) => lines.push(`warn ${message}`),
  } as unknown as Logger;
  return { log, lines };
}

const LIST = '/apis/gateway.networking.k8s.io/v1/gatewayclasses';
const CRD =
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gatewayclasses.gateway.networking.k8s.io';

describe('discoverGatewayApi', () => {
  it('finds GatewayClasses served and the bundle version of their CRD', async () => {
    const { log, lines } = recordingLog();
    const api = fakeApi({
      [LIST]: { items: [] },
      [CRD]: { metadata: { annotations: { 'gateway.networking.k8s.io/bundle-version': 'v1.6.3' } } },
    });
    expect(await discoverGatewayApi(api, log)).toEqual({ served: true, bundleVersion: 'v1.6.3' });
    expect(lines).toEqual(['info Gateway API: GatewayClass controller on']);
  });

  it('turns the controller off with one info line when not served or not allowed', async () => {
    for (const code of [404, 403]) {
      const { log, lines } = recordingLog();
      expect(await discoverGatewayApi(fakeApi({ [LIST]: code }), log)).toEqual({ served: false });
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^info Gateway API: .*GatewayClass controller is off/);
    }
  });

  it('runs with an unknown bundle version when the CRD may not be read, and throws on other failures', async () => {
    const { log, lines } = recordingLog();
    expect(await discoverGatewayApi(fakeApi({ [LIST]: { items: [] }, [CRD]: 403 }), log)).toEqual({
      served: true,
      bundleVersion: undefined,
    });
    expect(lines[0]).toMatch(/^warn /);
    await expect(discoverGatewayApi(fakeApi({ [LIST]: 500 }), log)).rejects.toThrow(
      'probing the Gateway API',
    );
  });
});
