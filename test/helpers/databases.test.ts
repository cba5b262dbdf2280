/**
 * Tests that cannot run here are reported as skipped, not dropped and not passed: a child vitest
 * runs test/fixtures/skips/engines.fixture.ts (every shape a PostgreSQL test takes in the suite,
 * plus vitest's own skips) against a PostgreSQL that is not there, and the JSON report and CI's
 * closing line (.ci/closing-line.mjs) must count each of them.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VITEST = path.join(ROOT, 'node_modules/vitest/vitest.mjs');
// Nothing listens on port 1: connecting fails at once, as with no server installed.
const NOWHERE = 'postgres://postgres@127.0.0.1:1/test';

interface Report {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: { status: string; assertionResults: { fullName: string; status: string }[] }[];
}

function runFixture(dir: string, env: Record<string, string | undefined>): { report: Report; out: string; status: number | null; reportFile: string } {
  const reportFile = path.join(dir, `report-${Math.random().toString(36).slice(2)}.json`);
  const res = spawnSync(
    process.execPath,
    [VITEST, 'run', '--config', 'test/fixtures/skips/vitest.config.ts', '--reporter=verbose', '--reporter=json', `--outputFile=${reportFile}`],
    { cwd: ROOT, encoding: 'utf8', timeout: 120_000, env: { ...process.env, FORCE_COLOR: undefined, NO_COLOR: '1', TEST_POSTGRES_URL: NOWHERE, ...env } },
  );
  return { report: JSON.parse(readFileSync(reportFile, 'utf8')) as Report, out: res.stdout + res.stderr, status: res.status, reportFile };
}

const closingLine = (reportFile: string, status: number | null) =>
  spawnSync(process.execPath, [path.join(ROOT, '.ci/closing-line.mjs'), reportFile, String(status)], { encoding: 'utf8' }).stdout.trim();

describe('PostgreSQL tests without a PostgreSQL, outside CI', () => {
  let dir: string;
  let run: ReturnType<typeof runFixture>;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-skips-'));
    run = runFixture(dir, { CI: undefined });
  }, 150_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are generated and reported as skipped, each of them, while their SQLite twins pass', () => {
    expect(run.status, run.out).toBe(0);
    const byName = Object.fromEntries(run.report.testResults.flatMap((f) => f.assertionResults).map((t) => [t.fullName, t.status]));
    expect(byName).toEqual({
      'a block with a beforeAll database on sqlite has a url': 'passed',
      'a block with a beforeAll database on sqlite nested still has it': 'passed',
      'a block with a beforeAll database on postgres has a url': 'skipped',
      'a block with a beforeAll database on postgres nested still has it': 'skipped',
      'a migrated database on sqlite answers': 'passed',
      'a migrated database on postgres answers': 'skipped',
      'plain tests makes a database on sqlite': 'passed',
      'plain tests makes a database on postgres': 'skipped',
      'plain tests asks for PostgreSQL unannounced': 'skipped',
      'plain tests is skipped statically': 'skipped',
      'plain tests is skipped by a condition': 'skipped',
      'plain tests skips itself': 'skipped',
      'plain tests is still to do': 'todo',
    });
  });

  it('say why, in the output', () => {
    expect(run.out).toContain(`skipping PostgreSQL tests: ${NOWHERE}`);
    expect(run.out).toMatch(/a block with a beforeAll database on postgres > has a url[^\n]*\[PostgreSQL unreachable: postgres:\/\/postgres@127\.0\.0\.1:1\/test: /);
    expect(run.out).toMatch(/asks for PostgreSQL unannounced[^\n]*\[PostgreSQL unreachable: /);
  });

  it('are counted in the closing line, with vitest\'s own skips (it.skip, skipIf, ctx.skip, todo)', () => {
    const lines = closingLine(run.reportFile, run.status).split('\n');
    expect(lines.at(-1)).toBe('4 passed, 0 failed, 9 skipped');
    // above the count, the skipped tests by file, one line each, so a new skip is seen in the log
    expect(lines[0]).toMatch(/^skipped \(9; docs\/testing\.md/);
    expect(lines).toContain('  test/fixtures/skips/engines.fixture.ts: 9');
    expect(lines.filter((l) => l.startsWith('    - '))).toHaveLength(9);
    expect(lines).toContain('    - plain tests skips itself');
  });
});

describe('PostgreSQL tests without a PostgreSQL, under CI', () => {
  it('fail, and the closing line says so', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ironring-skips-'));
    try {
      const run = runFixture(dir, { CI: 'true' });
      expect(run.status).not.toBe(0);
      expect(run.out).toContain(`PostgreSQL is required under CI but unreachable: ${NOWHERE}`);
      // The file fails while collecting: vitest then calls its tests skipped and none failed.
      expect(closingLine(run.reportFile, run.status)).toBe('0 passed, 1 failed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});

describe('the closing line', () => {
  it('counts a block whose beforeAll threw as a failure, not as skipped tests', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ironring-skips-'));
    try {
      const run = runFixture(dir, { SKIPS_FIXTURE: 'broken' });
      expect(run.status).not.toBe(0);
      // What vitest's totals say (and the closing line used to print, plus ", 2 skipped").
      expect([run.report.numPassedTests, run.report.numFailedTests, run.report.numPendingTests]).toEqual([1, 0, 2]);
      expect(closingLine(run.reportFile, run.status)).toBe('1 passed, 1 failed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});
