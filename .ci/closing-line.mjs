// The closing line CI reads, "N passed, N failed, N skipped", from vitest's JSON report
// (node .ci/closing-line.mjs REPORT EXIT_STATUS). Counted per test from the report's files rather
// than from its totals: a file that fails before its tests run (an import or beforeAll error)
// reports them as skipped and no test as failed, so it counts here as one failure and its tests
// as nothing. Skipped covers it.skip/skipIf, describe.skip/skipIf, runtime ctx.skip() (all
// "skipped" or "pending" in the report) and it.todo.
import { readFileSync } from 'node:fs';

const [report = '.vitest-report.json', status = '0'] = process.argv.slice(2);
let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const r = JSON.parse(readFileSync(report, 'utf8'));
  for (const file of r.testResults) {
    const tests = file.assertionResults ?? [];
    const count = (...states) => tests.filter((t) => states.includes(t.status)).length;
    if (file.status === 'failed' && count('failed') === 0) {
      failed += 1;
      passed += count('passed');
      continue;
    }
    passed += count('passed');
    failed += count('failed');
    skipped += count('skipped', 'pending', 'todo');
  }
} catch {
  failed = 1;
}
// A non-zero exit with nothing failed (a crash, a failing build or lint step): still a failure.
if (status !== '0' && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ''));
