import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Rebuilds a stale dist/ first: the tests that spawn bin/ironring run it, the others run src/.
    globalSetup: ['test/global-setup.ts'],
    // Generous on purpose: scenario tests run dozens of real processes (the Python `baremetal` client
    // alone spends a second of CPU per command), and a loaded machine runs them several times slower.
    // The bound only stops a hung test; no test asserts a duration (benchmarks do, under bench/).
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // A JSON report next to the console one: .ci/run turns it into the closing "N passed, N failed".
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
