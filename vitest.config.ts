import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    pool: 'forks',
    // Two test files at a time (vitest's default here is one per core less one: 1 on a 2-core CI
    // machine). Most files wait on processes, sockets and databases rather than compute.
    maxWorkers: 2,
    // Rebuilds a stale dist/ first: the tests that spawn bin/ironring run it, the others run src/.
    globalSetup: ['test/global-setup.ts'],
    // Generous on purpose: scenario tests run dozens of real processes (the Python `baremetal` client
    // alone spends a second of CPU per command), and a loaded machine runs them several times slower.
    // The bound only stops a hung test; no test asserts a duration (benchmarks do, under bench/).
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // A JSON report next to the console one: .ci/run turns it into the closing "N passed, N failed".
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
    projects: [
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, 'test/realnode/**'] } },
      // The real-machine files last and one at a time: each runs TCG VMs that want a core to
      // themselves, and the times they print are measurements.
      { extends: true, test: { name: 'realnode', include: ['test/realnode/**/*.test.ts'], fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
