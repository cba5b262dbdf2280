import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Rebuilds a stale dist/ first: the tests that spawn bin/ironring run it, the others run src/.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // A JSON report next to the console one: .ci/run turns it into the closing "N passed, N failed".
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
