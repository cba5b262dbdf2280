import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HashRing } from '../../src/ring/index.js';
import type { HostPlan, RingChangePlan } from '../../src/ring/ring-plan.js';
import { REPO_ROOT, runCli } from '../helpers/cli.js';

/** The JSON `ironring ring plan --format json` prints. */
interface Plan {
  mode: string;
  partitions: number;
  replicas: number;
  nodes: { source: string; count: number };
  hosts: HostPlan[];
  change: Omit<RingChangePlan, 'movedKeys'> | null;
}

function plan(args: string[]): Plan {
  const res = runCli(['ring', 'plan', ...args, '--format', 'json']);
  expect(res.stderr).toBe('');
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout) as Plan;
}

const sum = (values: number[]) => values.reduce((s, v) => s + v, 0);

let dir: string;
beforeAll(() => {
  // These tests run the built CLI, as users do; `npm test` builds first.
  if (!existsSync(path.join(REPO_ROOT, 'dist/cli/commands/ring.js'))) throw new Error('dist/ is missing or stale: run `npm run build` first');
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-ring-plan-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ironring ring plan', () => {
  it('prints each conductor’s exact share and node count', () => {
    const p = plan(['--hosts', 'c1,c2,c3=2', '--nodes', '4000']);
    expect(p).toMatchObject({ mode: 'balanced', partitions: 16384, replicas: 1, nodes: { source: 'synthetic', count: 4000 }, change: null });
    expect(p.hosts.map((h) => [h.name, h.weight])).toEqual([
      ['c1', 1],
      ['c2', 1],
      ['c3', 2],
    ]);
    expect(sum(p.hosts.map((h) => h.share!))).toBeCloseTo(1, 9);
    expect(sum(p.hosts.map((h) => h.nodes))).toBe(4000);
    // Weight 2 of 4: half the key space, within the balanced ring's ~1 % accuracy.
    expect(p.hosts[2]!.share).toBeGreaterThan(0.49);
    expect(p.hosts[2]!.share).toBeLessThan(0.51);
  });

  it('shows that adding a conductor moves nodes only to it, and how many', () => {
    const p = plan(['--hosts', 'c1,c2,c3', '--add', 'c4', '--nodes', '5000']);
    const c4 = p.hosts.find((h) => h.name === 'c4')!;
    expect(c4).toMatchObject({ weight: null, weightAfter: 1, share: null, nodes: 0 });
    expect(p.change).toMatchObject({ added: ['c4'], removed: [] });
    expect(p.change!.moved).toBe(c4.nodesAfter);
    expect(p.change!.idealFraction).toBeCloseTo(0.25, 12);
    expect(p.change!.movedFraction).toBeGreaterThan(0.22);
    expect(p.change!.movedFraction).toBeLessThan(0.28);
    for (const flow of p.change!.flows) expect(flow.to).toBe('c4');
    expect(sum(p.change!.flows.map((f) => f.nodes))).toBe(p.change!.moved);
  });

  it('places the nodes of a --keys file exactly as the ring library does, in tooz mode too', () => {
    const keys = Array.from({ length: 300 }, (_, i) => `6a1f${String(i).padStart(4, '0')}-0000-4000-8000-00000000000${i % 10}`);
    const file = path.join(dir, 'nodes.txt');
    writeFileSync(file, `${keys.join('\n')}\n\n`);
    const p = plan(['--hosts', 'cond-a,cond-b,cond-c', '--remove', 'cond-b', '--keys', file, '--mode', 'tooz', '--partitions', '32']);
    const before = new HashRing(['cond-a', 'cond-b', 'cond-c'], { mode: 'tooz' });
    const after = new HashRing(['cond-a', 'cond-c'], { mode: 'tooz' });
    const owned = (ring: HashRing, host: string) => keys.filter((k) => ring.owner(k) === host).length;
    expect(p.nodes).toEqual({ source: file, count: 300 });
    for (const h of p.hosts) {
      expect(h.nodes).toBe(owned(before, h.name));
      expect(h.nodesAfter).toBe(h.name === 'cond-b' ? 0 : owned(after, h.name));
      expect(h.share).toBeCloseTo(before.shares().get(h.name)!, 12);
    }
    expect(p.change!.moved).toBe(owned(before, 'cond-b'));
    for (const flow of p.change!.flows) expect(flow.from).toBe('cond-b');
  });

  it('counts a node once per conductor holding it with --replicas', () => {
    const p = plan(['--hosts', 'c1,c2,c3,c4', '--remove', 'c4', '--replicas', '2', '--nodes', '1000']);
    expect(sum(p.hosts.map((h) => h.nodes))).toBe(2000);
    expect(sum(p.hosts.map((h) => h.nodesAfter))).toBe(2000);
    expect(p.change!.replicaSetsChanged).toBeGreaterThanOrEqual(p.change!.moved);
  });

  it('prints a readable table by default', () => {
    const res = runCli(['ring', 'plan', '--hosts', 'c1,c2', '--add', 'c3', '--nodes', '300']);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('Conductor');
    expect(res.stdout).toMatch(/\d+ of 300 nodes change owner \(\d+\.\d\d %; the minimum any ring must move is 33\.33 %\)/);
    expect(res.stdout).toMatch(/c[12] +│ c3/);
  });

  it('explains itself in --help', () => {
    const res = runCli(['ring', 'plan', '--help']);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('Usage: ironring ring plan');
    for (const flag of ['--hosts', '--add', '--remove', '--keys', '--nodes', '--mode', '--partitions', '--replicas', '--format']) {
      expect(res.stdout).toContain(flag);
    }
  });

  it.each([
    [['--mode', 'ketama'], /ketama/],
    [['--replicas', '0'], /--replicas: "0"/],
    [['--nodes', 'many'], /--nodes: "many"/],
    [['--partitions', '1000'], /partitions 1000/],
    [['--add', 'c1'], /--add: "c1" is already in --hosts/],
    [['--remove', 'c9'], /--remove: "c9" is not in --hosts/],
    [['--remove', 'c1,c2'], /would leave no conductor/],
    [['--keys', '/nonexistent/nodes.txt'], /--keys: cannot read \/nonexistent\/nodes.txt: ENOENT/],
    [['--keys', 'x', '--nodes', '3'], /either --keys or --nodes/],
    [['--bogus'], /unknown option '--bogus'/],
  ])('rejects %j with one line on stderr and exit code 2', (args, message) => {
    const res = runCli(['ring', 'plan', '--hosts', 'c1,c2', ...args]);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(message);
  });

  it.each([[['--hosts', 'c1,c1']], [['--hosts', 'c1=0']], [['--hosts', ',']], [[]]])('rejects bad hosts %j with exit code 2', (args) => {
    const res = runCli(['ring', 'plan', ...args]);
    expect(res.code).toBe(2);
    expect(res.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});
