import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { runCli } from '../helpers/cli.js';
import { runMain } from '../helpers/cli-in-process.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';

const engines = await testEngines();

/** The baremetal set's migrations, in the order they apply. */
const BAREMETAL_MIGRATIONS = [
  '0001_initial', '0002_node_order', '0003_agent_token', '0004_node_inventory',
  '0005_inspection_rules', '0006_node_traits', '0007_chassis', '0008_portgroups',
  '0009_volume', '0010_node_raid_console_protected', '0011_node_storage_bios_automated_clean', '0012_node_owner',
  '0013_allocations', '0014_deploy_templates', '0015_node_retired_lessee_shard', '0016_port_smartnic', '0017_ring_events', '0018_node_partial_indexes', '0019_conductor_proxydhcp',
];

function commandPaths(cmd: Command, prefix: string[] = []): string[][] {
  return cmd.commands.flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])]);
}

/** `ironring <path> --help` run by main() in this process: its exit code and what it wrote to stdout. */
async function helpInProcess(p: string[]): Promise<{ code: number; stdout: string }> {
  const { code, stdout } = await runMain([...p, '--help']);
  return { code, stdout };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-cli-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('ironring --help', () => {
  it('explains the program and lists its commands', () => {
    const res = runCli(['--help']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^Usage: ironring \[options\] \[command\]/);
    expect(res.stdout).toContain('--config <file>');
    for (const name of ['up', 'manage', 'config']) expect(res.stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
  });

  it('gives every subcommand a help text with a description', async () => {
    // In process, through the same main() that bin/ironring runs: one process per subcommand took
    // over 30 s on a loaded machine. The top-level --help above still goes through the real binary.
    const paths = commandPaths(buildProgram());
    expect(paths.length).toBeGreaterThan(5);
    for (const p of paths) {
      const res = await helpInProcess(p);
      expect(res.code, `ironring ${p.join(' ')} --help`).toBe(0);
      expect(res.stdout).toContain(`Usage: ironring ${p.join(' ')}`);
      const description = res.stdout.split('\n').slice(1).join('\n').trim();
      expect(description.length, `description of ${p.join(' ')}`).toBeGreaterThan(20);
    }
  });

  it('registers no command that does nothing: each has an action or subcommands', () => {
    const walk = (cmd: Command): void => {
      for (const sub of cmd.commands) {
        const action = (sub as unknown as { _actionHandler: unknown })._actionHandler;
        expect(action !== null || sub.commands.length > 0, `ironring … ${sub.name()}`).toBe(true);
        walk(sub);
      }
    };
    walk(buildProgram());
  });

  it('answers an unknown command or flag with a short message and exit code 2', () => {
    const res = runCli(['frobnicate']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/unknown command 'frobnicate'/);
    const flag = runCli(['up', '--no-such-flag']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/unknown option '--no-such-flag'/);
  });
});

describe('ironring config', () => {
  it('prints a sample file with every option', () => {
    const res = runCli(['config', 'defaults']);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('[conductor]');
    expect(res.stdout).toContain('#heartbeat_interval = 10');
    expect(res.stdout).toContain('# Seconds between heartbeats written with the database clock.');
  });

  it('shows the effective configuration with its sources, secrets masked', () => {
    writeFileSync(path.join(dir, 'ironring.toml'), '[conductor]\nheartbeat_interval = 4\n');
    const res = runCli(['config', 'show', '--format', 'json'], { cwd: dir, env: { IRONRING_DATABASE_URL: 'postgres://u:topsecret@db/ironring' } });
    expect(res.code).toBe(0);
    expect(res.stdout).not.toContain('topsecret');
    const shown = JSON.parse(res.stdout) as { file: string; options: Array<{ section: string; key: string; value: unknown; source: string }> };
    expect(shown.file).toBe(path.join(dir, 'ironring.toml'));
    expect(shown.options.find((o) => o.key === 'heartbeat_interval')).toMatchObject({ value: 4, source: 'file' });
    expect(shown.options.find((o) => o.key === 'url')).toMatchObject({ value: 'postgres://u:***@db/ironring', source: 'environment' });
  });

  it('refuses a bad config file with one line naming file, key and type, exit code 2', () => {
    const file = path.join(dir, 'bad.toml');
    writeFileSync(file, '[conductor]\nheartbeat_timeout = "a minute"\n');
    for (const args of [['config', 'show'], ['up', '--data-dir', dir], ['manage', 'db', 'migrate']]) {
      const res = runCli([...args, '--config', file], { cwd: dir });
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr).toBe(`ironring: ${file}: [conductor] heartbeat_timeout: expected an integer ≥ 2, got "a minute"\n`);
      expect(res.stdout).toBe('');
    }
  });

  it('refuses a config file that is not TOML', () => {
    const file = path.join(dir, 'bad.toml');
    writeFileSync(file, 'this is = = not toml\n');
    const res = runCli(['config', 'show', '--config', file]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(new RegExp(`^ironring: ${file}: not valid TOML: .+\\n$`));
  });
});

describe('ironring manage db migrate', () => {
  it.each(engines)('applies the schema on %s and is a no-op the second time', async (engine) => {
    const target = await createTestDatabase(engine);
    try {
      const first = runCli(['manage', 'db', 'migrate', '--database', target.url, '--format', 'json']);
      expect(first.code, first.stderr).toBe(0);
      expect(JSON.parse(first.stdout).applied).toEqual([...BAREMETAL_MIGRATIONS.map((m) => `baremetal/${m}`), 'api/0001_initial', 'cell/0001_initial', 'cell/0002_instance_fault', 'cell/0003_mapped_hot_updates', 'cell/0004_service_instance_token', 'cell/0005_instance_order']);
      const second = runCli(['manage', 'db', 'migrate', '--database', target.url]);
      expect(second.code).toBe(0);
      expect(second.stdout).toMatch(/is up to date; nothing to apply/);
      const version = runCli(['manage', 'db', 'version', '--database', target.url, '--format', 'json']);
      expect(JSON.parse(version.stdout).sets).toEqual([
        { set: 'baremetal', applied: BAREMETAL_MIGRATIONS },
        { set: 'api', applied: ['0001_initial'] },
        { set: 'cell', applied: ['0001_initial', '0002_instance_fault', '0003_mapped_hot_updates', '0004_service_instance_token', '0005_instance_order'] },
      ]);
    } finally {
      await target.drop();
    }
  });

  it('migrates one SQLite file from several processes at once, exactly once', async () => {
    const url = `sqlite://${path.join(dir, 'shared.db')}`;
    const { spawn } = await import('node:child_process');
    const { BIN, cleanEnv } = await import('../helpers/cli.js');
    const runs = await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<{ code: number | null; out: string }>((resolve) => {
            const child = spawn(process.execPath, [BIN, 'manage', 'db', 'migrate', '--database', url, '--format', 'json'], { env: cleanEnv() });
            let out = '';
            child.stdout.on('data', (d: Buffer) => (out += d.toString()));
            child.on('exit', (code) => resolve({ code, out }));
          }),
      ),
    );
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0]);
    const applied = runs.flatMap((r) => JSON.parse(r.out).applied as string[]);
    expect(applied.sort()).toEqual(['api/0001_initial', ...BAREMETAL_MIGRATIONS.map((m) => `baremetal/${m}`), 'cell/0001_initial', 'cell/0002_instance_fault', 'cell/0003_mapped_hot_updates', 'cell/0004_service_instance_token', 'cell/0005_instance_order']);
  });

  it('names the unreachable database with its password masked, exit code 1', () => {
    const res = runCli(['manage', 'db', 'migrate', '--database', 'postgres://ironring:hunter2@127.0.0.1:1/ironring']);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe('ironring: cannot connect to database postgres://ironring:***@127.0.0.1:1/ironring: connection refused (is the server running and listening there?)\n');
  });

  it('refuses a malformed database URL and an unknown migration set', () => {
    const url = runCli(['manage', 'db', 'migrate', '--database', 'oracle://x@y/z']);
    expect(url.code).toBe(1);
    expect(url.stderr).toMatch(/^ironring: unsupported database "oracle"/);
    const only = runCli(['manage', 'db', 'migrate', '--only', 'baremetal,nodes']);
    expect(only.code).toBe(2);
    expect(only.stderr).toBe('ironring: --only: unknown migration set "nodes" (choose from baremetal, api, cell)\n');
  });
});
