/**
 * `ironring manage …`: operator tasks against the database: `db` (schema) here, `cell` (cells, host
 * mappings, host discovery) in `manage-cell.ts`.
 */
import { Command, Option } from 'commander';
import { UsageError } from '../../common/errors.js';
import type { Store } from '../../db/connect.js';
import { MIGRATION_SETS } from '../../db/migration-sets.js';
import type { MigrationSet } from '../../db/migration-sets.js';
import { commandContext } from '../context.js';
import type { CommandContext } from '../context.js';
import { emit, formatOption, renderTable } from '../output.js';
import { manageCellCommand } from './manage-cell.js';
import type { OutputFormat } from '../output.js';

const databaseOption = () =>
  new Option('--database <url>', 'database URL (overrides [database] url), e.g. postgres://user@host/ironring or sqlite:///var/lib/ironring/ironring.db');

const onlyOption = () =>
  new Option('--only <sets>', `comma-separated migration sets to apply (${MIGRATION_SETS.join(', ')}); default all`);

function parseSets(value: string | undefined): MigrationSet[] {
  if (value === undefined) return [...MIGRATION_SETS];
  const sets = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const s of sets) {
    if (!(MIGRATION_SETS as readonly string[]).includes(s)) {
      throw new UsageError(`--only: unknown migration set ${JSON.stringify(s)} (choose from ${MIGRATION_SETS.join(', ')})`);
    }
  }
  if (sets.length === 0) throw new UsageError('--only: name at least one migration set');
  return sets as MigrationSet[];
}

/** Opens the configured database, runs `work`, and always closes it. */
async function withStore<T>(ctx: CommandContext, work: (store: Store) => Promise<T>): Promise<T> {
  const { database } = ctx.config;
  const { openDatabase } = await import('../../db/connect.js');
  const store = await openDatabase(database.url, {
    maxPoolSize: 2,
    connectTimeout: database.connect_timeout,
    sqliteBusyTimeout: database.sqlite_busy_timeout,
  });
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

export function manageCommand(): Command {
  const manage = new Command('manage').description('operator tasks run directly against the database');
  const db = manage.command('db').description('database schema: apply migrations, show what is applied');

  db.command('migrate')
    .summary('create or upgrade the database schema')
    .description(
      'Create or upgrade the schema: the bare-metal tables, the compute API database and a cell ' +
        'database (all in one database by default; --only picks sets). Safe to re-run: migrations ' +
        'already applied are skipped.',
    )
    .addOption(databaseOption())
    .addOption(onlyOption())
    .addOption(formatOption())
    .action(async (opts: { only?: string; format: OutputFormat }, command: Command) => {
      const sets = parseSets(opts.only);
      const ctx = commandContext(command, { database: 'database.url' });
      await withStore(ctx, async (store) => {
        const { migrateDatabase } = await import('../../db/migrate.js');
        const reports = await migrateDatabase(store, sets);
        const applied = reports.flatMap((r) => r.applied.map((name) => `${r.set}/${name}`));
        emit(opts.format, { database: store.displayUrl, applied }, () =>
          applied.length === 0
            ? `Database ${store.displayUrl} is up to date; nothing to apply.`
            : `Applied to ${store.displayUrl}:\n${applied.map((a) => `  ${a}`).join('\n')}`,
        );
      });
    });

  db.command('version')
    .description('list the migrations applied to the database, per set')
    .addOption(databaseOption())
    .addOption(formatOption())
    .action(async (opts: { format: OutputFormat }, command: Command) => {
      const ctx = commandContext(command, { database: 'database.url' });
      await withStore(ctx, async (store) => {
        const { appliedMigrations } = await import('../../db/migrate.js');
        const rows: Array<{ set: MigrationSet; applied: string[] }> = [];
        for (const set of MIGRATION_SETS) rows.push({ set, applied: await appliedMigrations(store, set) });
        emit(opts.format, { database: store.displayUrl, sets: rows }, () =>
          renderTable(rows, [
            { header: 'Set', value: (r) => r.set },
            { header: 'Applied migrations', value: (r) => (r.applied.length ? r.applied.join(', ') : '(none)') },
          ]),
        );
      });
    });

  manage.addCommand(manageCellCommand());
  return manage;
}
