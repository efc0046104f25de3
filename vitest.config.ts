import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'api',
          include: ['src/**/*.test.ts', 'test/server/**/*.test.ts', 'test/client/**/*.test.ts'],
        },
      },
      {
        // Against a real kube-apiserver and etcd: one control plane per run (built from Go modules
        // on first use, then cached), or the cluster of KUBECONFIG when it is set.
        extends: true,
        test: {
          name: 'kubernetes',
          include: ['test/kubernetes/**/*.test.ts'],
          globalSetup: ['test/support/kubernetes-global-setup.ts'],
          // The first run builds the tools (10-20 min); the setup prints progress meanwhile.
          hookTimeout: 120_000,
          testTimeout: 120_000,
        },
      },
    ],
  },
});
