import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The default report, then one plain closing line of totals that any CI log reader understands.
    reporters: ['default', './test/support/plain-summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'api',
          include: [
            'src/**/*.test.ts',
            'test/server/**/*.test.ts',
            'test/client/**/*.test.ts',
            'test/edge/**/*.test.ts',
          ],
        },
      },
      {
        // The server and client suites again, on PostgreSQL: one throwaway cluster per run (or the
        // server of EDGEWARD_TEST_POSTGRES_URL), a fresh database per test server. Without PostgreSQL
        // on the machine these tests are reported as skipped, with the reason.
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/server/**/*.test.ts', 'test/client/**/*.test.ts'],
          globalSetup: ['test/support/postgres-global-setup.ts'],
          runner: './test/support/postgres-runner.ts',
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
      {
        // The image, built without Docker (debootstrap, umoci) and run with chroot: needs root.
        extends: true,
        test: {
          name: 'image',
          include: ['test/image/**/*.test.ts'],
          hookTimeout: 900_000,
          testTimeout: 120_000,
        },
      },
    ],
  },
});
