/** `ironring manage cell …` through the built command: output, exit codes, one-line errors. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { runCli } from '../helpers/cli.js';
import type { CliResult } from '../helpers/cli.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';
import { addNode, addService } from './fixtures.js';

const engines = await testEngines();

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-cell-cli-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A failure is one line on stderr, never a stack trace. */
function expectOneLineError(res: CliResult, code: number, pattern: RegExp): void {
  expect(res.code, res.stderr).toBe(code);
  const lines = res.stderr.trim().split('\n');
  expect(lines, res.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^ironring: /);
  expect(lines[0]).toMatch(pattern);
  expect(res.stderr).not.toMatch(/\n\s+at /);
}

for (const engine of engines) {
  describe(`ironring manage cell on ${engine}`, () => {
    let api: TestDatabase;
    let other: TestDatabase;
    let store: Store;
    beforeEach(async () => {
      api = await createTestDatabase(engine);
      other = await createTestDatabase(engine);
      store = await openDatabase(api.url);
    });
    afterEach(async () => {
      await store.close();
      await api.drop();
      await other.drop();
    });
    const cell = (...args: string[]) => runCli(['manage', 'cell', ...args, '--api-database', api.url], { cwd: dir });

    it('sets up cell0 and a cell, discovers by service with --strict and --verbose, lists and deletes hosts and cells', { timeout: 240_000 }, async () => {
      const cell0 = cell('map-cell0', '-f', 'json');
      expect(cell0.code, cell0.stderr).toBe(0);
      expect(JSON.parse(cell0.stdout)).toMatchObject({ uuid: '00000000-0000-0000-0000-000000000000', name: 'cell0', created: true });
      const again = cell('map-cell0');
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/^Cell0 is already set up/);

      const created = cell('create', '--name', 'cell1', '--database-connection', api.url, '-f', 'json');
      expect(created.code, created.stderr).toBe(0);
      const cell1 = JSON.parse(created.stdout) as { uuid: string; name: string };
      expect(cell1.name).toBe('cell1');
      expectOneLineError(cell('create', '--name', 'cell1', '--database-connection', other.url), 2, /already exists/);

      // Compute services registered, no nodes yet: discovery by node finds nothing (exit 1 with --strict).
      await migrateDatabase(store, ['cell']);
      await addService(store, 'compute-a');
      await addService(store, 'compute-b');
      const byNode = cell('discover-hosts', '--strict');
      expect(byNode.code).toBe(1);
      expect(byNode.stdout).toMatch(/No new hosts to map in 1 cell/);

      const verbose = cell('discover-hosts', '--by-service', '--strict', '--verbose');
      expect(verbose.code, verbose.stderr).toBe(0);
      expect(verbose.stdout.split('\n')).toEqual(
        expect.arrayContaining([
          'Found 2 cell mappings.',
          'Skipping cell0 since it does not contain hosts.',
          `Getting computes from cell 'cell1': ${cell1.uuid}`,
          `Creating host mapping for service host 'compute-a': ${cell1.uuid}`,
          `Creating host mapping for service host 'compute-b': ${cell1.uuid}`,
          `Found 2 unmapped computes in cell: ${cell1.uuid}`,
          'Mapped 2 new hosts in 1 cell.',
        ]),
      );
      expect(cell('discover-hosts', '--by-service', '--strict').code).toBe(1);
      expect(cell('discover-hosts', '--by-service').code).toBe(0);

      const table = cell('list-hosts');
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/Cell Name.*Cell UUID.*Hostname/);
      expect(table.stdout).toMatch(new RegExp(`cell1 +│ ${cell1.uuid} │ compute-a`));
      const json = cell('list-hosts', '--cell', cell1.uuid, '-f', 'json');
      expect(JSON.parse(json.stdout)).toEqual([
        { cell_name: 'cell1', cell_uuid: cell1.uuid, host: 'compute-a' },
        { cell_name: 'cell1', cell_uuid: cell1.uuid, host: 'compute-b' },
      ]);
      expectOneLineError(cell('list-hosts', '--cell', 'nope'), 1, /cell "nope" not found/);

      const list = cell('list');
      expect(list.stdout).toMatch(/Name +│ UUID +│ Database Connection +│ Disabled/);
      expect(list.stdout).toMatch(/cell0[\s\S]*cell1/);

      expectOneLineError(cell('delete', 'cell1'), 2, /2 host\(s\) mapped to cell "cell1".*--force/);
      expectOneLineError(cell('delete-host', '--cell', 'cell1', '--host', 'nowhere'), 2, /not mapped/);
      expectOneLineError(cell('delete-host', '--cell', 'cell0', '--host', 'compute-a'), 3, /not in cell "cell0".*but in cell "cell1"/);
      expectOneLineError(cell('delete-host', '--cell', 'cellX', '--host', 'compute-a'), 1, /not found/);
      const deletedHost = cell('delete-host', '--cell', 'cell1', '--host', 'compute-a');
      expect(deletedHost.code, deletedHost.stderr).toBe(0);
      expect(deletedHost.stdout).toMatch(/Deleted the mapping of host compute-a to cell cell1/);

      const forced = cell('delete', 'cell1', '--force', '-f', 'json');
      expect(forced.code, forced.stderr).toBe(0);
      expect(JSON.parse(forced.stdout)).toMatchObject({ deleted: { name: 'cell1' }, hosts_deleted: ['compute-b'] });
      expect(JSON.parse(cell('list', '-f', 'json').stdout).map((c: { name: string }) => c.name)).toEqual(['cell0']);
      expectOneLineError(cell('delete', 'cell1'), 1, /not found/);
    });

    it('exits 2 and names both cells when a host is already mapped to another cell, mapping the rest', { timeout: 120_000 }, async () => {
      expect(cell('create', '--name', 'one', '--database-connection', api.url).code).toBe(0);
      expect(cell('create', '--name', 'two', '--database-connection', other.url).code).toBe(0);
      const two = await openDatabase(other.url);
      try {
        await addService(two, 'shared');
        expect(cell('discover-hosts', '--by-service', '--cell', 'two').code).toBe(0);
        await migrateDatabase(store, ['cell']);
        await addService(store, 'shared');
        await addNode(store, 'solo');
        const res = cell('discover-hosts', '--by-service', '-f', 'json');
        expect(res.code).toBe(2);
        const out = JSON.parse(res.stdout) as { mapped: Array<{ host: string }>; conflicts: unknown[] };
        expect(out.mapped.map((m) => m.host)).toEqual(['solo']);
        expect(out.conflicts).toEqual([{ host: 'shared', cell_uuid: expect.any(String), cell_name: 'one', mapped_cell_uuid: expect.any(String), mapped_cell_name: 'two' }]);
        expect(res.stderr).toMatch(/host shared found in cell one .* is already mapped to cell two/);
      } finally {
        await two.close();
      }
    });
  });
}

describe('ironring manage cell: bad input', () => {
  it('refuses an API database that was never migrated, saying how to fix it', { timeout: 60_000 }, () => {
    const res = runCli(['manage', 'cell', 'list', '--api-database', `sqlite://${dir}/empty.db`], { cwd: dir });
    expectOneLineError(res, 1, /not migrated.*manage db migrate/);
  });

  it('answers a malformed URL, a missing option and an unknown cell with one line and a non-zero exit', { timeout: 120_000 }, () => {
    expectOneLineError(runCli(['manage', 'cell', 'list', '--api-database', 'mysql://x/y'], { cwd: dir }), 1, /unsupported database/);
    const missing = runCli(['manage', 'cell', 'delete-host', '--cell', 'x', '--api-database', `sqlite://${dir}/a.db`], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/required option '--host <host>'/);
    expect(runCli(['manage', 'cell', 'map-cell0', '--api-database', `sqlite://${dir}/a.db`], { cwd: dir }).code).toBe(0);
    expectOneLineError(runCli(['manage', 'cell', 'discover-hosts', '--cell', 'nope', '--api-database', `sqlite://${dir}/a.db`], { cwd: dir }), 1, /"nope" not found/);
    expectOneLineError(
      runCli(['manage', 'cell', 'create', '--name', 'bad name', '--database-connection', `sqlite://${dir}/c.db`, '--api-database', `sqlite://${dir}/a.db`], { cwd: dir }),
      1,
      /cell name "bad name" is invalid/,
    );
  });

  it('explains discovery, its options and its exit codes in --help', { timeout: 60_000 }, () => {
    const res = runCli(['manage', 'cell', 'discover-hosts', '--help'], { cwd: dir });
    expect(res.code).toBe(0);
    for (const text of ['--by-service', '--strict', '--verbose', '--cell <cell>', '--api-database <url>', 'Exit codes', 'one query per cell']) {
      expect(res.stdout).toContain(text);
    }
    const group = runCli(['manage', 'cell', '--help'], { cwd: dir });
    expect(group.stdout).toMatch(/Day zero/);
    for (const name of ['map-cell0', 'create', 'list', 'delete', 'list-hosts', 'delete-host', 'discover-hosts']) expect(group.stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
  });
});
