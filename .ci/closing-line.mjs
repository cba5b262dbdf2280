// The closing line CI reads, "N passed, N failed, N skipped", from vitest's JSON report
// (node .ci/closing-line.mjs REPORT EXIT_STATUS [CONFORMANCE_REPORT]). Counted per test from the report's files rather
// than from its totals: a file that fails before its tests run (an import or beforeAll error)
// reports them as skipped and no test as failed, so it counts here as one failure and its tests
// as nothing. Skipped covers it.skip/skipIf, describe.skip/skipIf, runtime ctx.skip() (all
// "skipped" or "pending" in the report) and it.todo. The skipped tests are listed above the
// closing line, per file, so that a skip is seen and can be checked against docs/testing.md
// ("Skipped tests"), which says which skips are expected and why.
import { readFileSync } from 'node:fs';

const [report = '.vitest-report.json', status = '0', conformanceReport] = process.argv.slice(2);
let passed = 0;
let failed = 0;
let skipped = 0;
/** Skipped test names per file, for the list printed above the closing line. */
const skippedByFile = new Map();
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
    const names = tests.filter((t) => ['skipped', 'pending', 'todo'].includes(t.status)).map((t) => t.fullName ?? t.title);
    if (names.length > 0) skippedByFile.set(file.name.replace(`${process.cwd()}/`, ''), names);
  }
} catch {
  failed = 1;
}
// The conformance run (conformance/run.ts): its regressions are failures; a run that could not
// finish is one.
if (conformanceReport !== undefined) {
  try {
    const c = JSON.parse(readFileSync(conformanceReport, 'utf8'));
    console.log(`conformance (Ironic's tempest API suite at ${c.maxVersion ?? '?'}): ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped; ${c.regressions.length} regressions${c.error ? `; ${c.error}` : ''}`);
    failed += c.regressions.length + (c.error ? 1 : 0);
  } catch {
    console.log('conformance: no report (the run did not finish)');
    failed += 1;
  }
}
// A non-zero exit with nothing failed (a crash, a failing build or lint step): still a failure.
if (status !== '0' && failed === 0) failed = 1;
if (skippedByFile.size > 0) {
  console.log(`skipped (${skipped}; docs/testing.md says which skips are expected and why):`);
  for (const [file, names] of skippedByFile) {
    console.log(`  ${file}: ${names.length}`);
    for (const name of names.slice(0, 10)) console.log(`    - ${name}`);
    if (names.length > 10) console.log(`    … and ${names.length - 10} more`);
  }
}
console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ''));
