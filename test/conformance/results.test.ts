/**
 * How the conformance run reads tempest's results (conformance/results.ts): every listed test gets
 * one outcome, a failed class set-up fails its tests, a test that never ran counts as failed.
 */
import { describe, expect, it } from 'vitest';
import { classify, expectedPasses, moduleTable, parseSubunitCsv, testIdOf } from '../../conformance/results.js';

const P = 'ironic_tempest_plugin.tests.api.admin';

describe('conformance results', () => {
  it('strips the attribute brackets from test ids', () => {
    expect(testIdOf(`${P}.test_nodes.TestNodes.test_create_node[id-4ad,smoke]\n`)).toBe(`${P}.test_nodes.TestNodes.test_create_node`);
  });

  it('reads subunit2csv rows, quoted ids with commas in their attributes included', () => {
    const csv = [
      'test,status,start_time,stop_time',
      `${P}.test_drivers.TestDrivers.test_list_drivers[id-5a],success,2026-12-06 17:00:00+00:00,2026-12-06 17:00:01+00:00`,
      `"${P}.test_nodes.TestNodes.test_create_node[id-4ad,smoke]",fail,2026-12-06 17:00:00+00:00,2026-12-06 17:00:01+00:00`,
      `setUpClass (${P}.test_chassis.TestChassis),fail,,`,
      '',
    ].join('\n');
    expect([...parseSubunitCsv(csv)]).toEqual([
      [`${P}.test_drivers.TestDrivers.test_list_drivers`, 'success'],
      [`${P}.test_nodes.TestNodes.test_create_node`, 'fail'],
      [`setUpClass (${P}.test_chassis.TestChassis)`, 'fail'],
    ]);
  });

  it('gives every listed test one outcome: its own, its class set-up’s, or failed when it did not run', () => {
    const listed = [`${P}.test_a.A.test_1`, `${P}.test_a.A.test_2`, `${P}.test_b.B.test_1`, `${P}.test_c.C.test_1`, `${P}.test_d.D.test_1`];
    const reported = new Map([
      [`${P}.test_a.A.test_1`, 'success'],
      [`${P}.test_a.A.test_2`, 'skip'],
      [`setUpClass (${P}.test_b.B)`, 'fail'],
      [`setUpClass (${P}.test_c.C)`, 'skip'],
    ]);
    const outcomes = classify(listed, reported);
    expect([...outcomes.values()].map((o) => o.status)).toEqual(['passed', 'skipped', 'failed', 'skipped', 'failed']);
    expect(outcomes.get(`${P}.test_d.D.test_1`)).toEqual({ status: 'failed', reason: 'did not run' });
    expect(moduleTable(outcomes).trim().split('\n').at(-1)).toMatch(/^total\s+1\s+2\s+2$/);
  });

  it('reads the expected passes, ignoring comments and blank lines', () => {
    expect([...expectedPasses('# origin\n\na.b.c\n  d.e.f  \n')]).toEqual(['a.b.c', 'd.e.f']);
  });
});
