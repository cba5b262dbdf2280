/**
 * Reading a tempest run: the test ids tempest lists, the per-test outcomes `subunit2csv` gives for
 * the last run, and what they mean per listed test — a class whose set-up failed (or skipped) is
 * reported once as `setUpClass (module.Class)`, and each of its tests takes that outcome; a listed
 * test with no outcome at all did not run, which counts as failed.
 */

export type Status = 'passed' | 'failed' | 'skipped';

export interface Outcome {
  status: Status;
  reason?: string;
}

/** A listed or reported test id without its `[id-…,smoke]` attributes. */
export function testIdOf(line: string): string {
  return line.trim().replace(/\[[^\]]*\]$/, '');
}

/** `subunit2csv` output (`test,status,start_time,stop_time`) → status per test id, as reported. */
export function parseSubunitCsv(csv: string): Map<string, string> {
  const statuses = new Map<string, string>();
  for (const line of csv.split('\n').slice(1)) {
    // Test ids hold no commas outside their attribute brackets: split at the first comma after them.
    const m = /^("?)(.*?)\1,(\w+),/.exec(line);
    if (m === null) continue;
    statuses.set(testIdOf(m[2]!), m[3]!);
  }
  return statuses;
}

const STATUS: Readonly<Record<string, Status>> = { success: 'passed', xfail: 'passed', skip: 'skipped', fail: 'failed', uxsuccess: 'failed' };

/** The outcome of each listed test. */
export function classify(listed: readonly string[], reported: ReadonlyMap<string, string>): Map<string, Outcome> {
  const classSetUp = new Map<string, string>();
  for (const [id, status] of reported) {
    const m = /^setUpClass \((.+)\)$/.exec(id);
    if (m) classSetUp.set(m[1]!, status);
  }
  const outcomes = new Map<string, Outcome>();
  for (const test of listed) {
    const status = reported.get(test);
    if (status !== undefined) {
      outcomes.set(test, { status: STATUS[status] ?? 'failed', ...(STATUS[status] === undefined ? { reason: status } : {}) });
      continue;
    }
    const klass = test.slice(0, test.lastIndexOf('.'));
    const setUp = classSetUp.get(klass);
    if (setUp !== undefined) outcomes.set(test, { status: STATUS[setUp] === 'skipped' ? 'skipped' : 'failed', reason: `setUpClass ${setUp}` });
    else outcomes.set(test, { status: 'failed', reason: 'did not run' });
  }
  return outcomes;
}

/** The ids of conformance/expected-passes.txt (comments and blank lines ignored). */
export function expectedPasses(text: string): Set<string> {
  return new Set(
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#')),
  );
}

/** A table per module (`admin.test_nodes`): passed, failed, skipped, and the totals. */
export function moduleTable(outcomes: ReadonlyMap<string, Outcome>): string {
  const rows = new Map<string, Record<Status, number>>();
  for (const [test, o] of outcomes) {
    const parts = test.replace(/^ironic_tempest_plugin\.tests\.api\./, '').split('.');
    const module = parts.slice(0, -2).join('.');
    const row = rows.get(module) ?? { passed: 0, failed: 0, skipped: 0 };
    row[o.status]++;
    rows.set(module, row);
  }
  const width = Math.max(6, ...[...rows.keys()].map((k) => k.length));
  const line = (name: string, r: Record<Status, number>) => `${name.padEnd(width)}  ${String(r.passed).padStart(6)}  ${String(r.failed).padStart(6)}  ${String(r.skipped).padStart(7)}\n`;
  const total = { passed: 0, failed: 0, skipped: 0 };
  let out = `${'module'.padEnd(width)}  passed  failed  skipped\n`;
  for (const [name, r] of [...rows].sort(([a], [b]) => a.localeCompare(b))) {
    out += line(name, r);
    for (const k of ['passed', 'failed', 'skipped'] as const) total[k] += r[k];
  }
  return out + line('total', total);
}
