import { describe, expect, it } from 'vitest';
import {
  kubernetesWrapperGoMod,
  stagingModules,
  stagingVersion,
  wrapperKubernetesVersion,
} from './kubernetes-wrapper.js';

const RELEASE_GO_MOD = `module k8s.io/kubernetes

go 1.26.0

require (
\tgithub.com/spf13/cobra v1.10.2
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
\tk8s.io/sample-apiserver v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver
\tk8s.io/sample-cli-plugin => ./staging/src/k8s.io/sample-cli-plugin
)
`;

describe('kubernetes wrapper module', () => {
  it('replaces exactly the staging modules the release requires at v0.0.0', () => {
    // sample-cli-plugin is replaced but not required: it is not published, so it must be left out.
    expect(stagingModules(RELEASE_GO_MOD)).toEqual([
      'k8s.io/api',
      'k8s.io/client-go',
      'k8s.io/sample-apiserver',
    ]);
  });

  it('maps the release to its staging tag', () => {
    expect(stagingVersion('v1.36.3')).toBe('v0.36.3');
    expect(() => stagingVersion('1.36')).toThrow(/not a Kubernetes release/);
  });

  it('writes a go.mod that requires the release and pins every staging module', () => {
    const goMod = kubernetesWrapperGoMod('v1.36.3', RELEASE_GO_MOD);
    expect(goMod).toContain('require k8s.io/kubernetes v1.36.3');
    expect(goMod).toContain('\tk8s.io/client-go => k8s.io/client-go v0.36.3');
    expect(goMod).not.toContain('sample-cli-plugin');
    expect(goMod).toContain('go 1.26.0');
    expect(wrapperKubernetesVersion(goMod)).toBe('v1.36.3');
  });
});
