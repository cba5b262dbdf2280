/**
 * `ironring manage cell …`: cells and host mappings in the compute tier's API database, and host
 * discovery — `nova-manage cell_v2` for ironring, with the same exit codes (see `cells/errors.ts`).
 */
import { Command, Option } from 'commander';
import type { CellMapping, CellStores, DiscoveryResult, HostMapping } from '../../cells/index.js';
import { maskUrl } from '../../common/mask.js';
import type { Store } from '../../db/connect.js';
import { commandContext } from '../context.js';
import type { CommandContext } from '../context.js';
import { emit, formatOption, renderRecord, renderTable } from '../output.js';
import type { OutputFormat } from '../output.js';

const apiDatabaseOption = () =>
  new Option(
    '--api-database <url>',
    "the compute tier's API database (overrides [api_database] url; default sqlite api.db under data_dir), e.g. postgres://user@host/ironring_api",
  );

const FLAGS = { apiDatabase: 'api_database.url' } as const;

/**
 * Opens the API database and the cell-store cache, runs `work`, and closes both. `setup` commands
 * (create, map-cell0) create or upgrade the API schema first; the others refuse an unmigrated one.
 */
async function withApi<T>(ctx: CommandContext, setup: boolean, work: (api: Store, cells: CellStores) => Promise<T>): Promise<T> {
  const { openDatabase } = await import('../../db/connect.js');
  const { migrateDatabase, requireSchema } = await import('../../db/migrate.js');
  const { CellStores } = await import('../../cells/index.js');
  const { database } = ctx.config;
  const open = { connectTimeout: database.connect_timeout, sqliteBusyTimeout: database.sqlite_busy_timeout, applicationName: 'ironring-manage' };
  const url = ctx.config.api_database.url;
  const api = await openDatabase(url, { maxPoolSize: 2, ...open });
  const cells = new CellStores({ maxPoolSize: 2, logger: ctx.logger, open });
  // A cell whose database is the API database (the embedded default) reuses this connection.
  cells.share(url, api);
  try {
    if (setup) await migrateDatabase(api, ['api']);
    else await requireSchema(api, ['api']);
    return await work(api, cells);
  } finally {
    await cells.close();
    await api.close();
  }
}

function cellJson(cell: CellMapping) {
  return { uuid: cell.uuid, name: cell.name, database_connection: maskUrl(cell.databaseConnection), disabled: cell.disabled };
}

function cellRecord(cell: CellMapping): Record<string, unknown> {
  return { name: cell.name, uuid: cell.uuid, database_connection: maskUrl(cell.databaseConnection), disabled: cell.disabled };
}

function hostJson(h: HostMapping) {
  return { cell_name: h.cellName, cell_uuid: h.cellUuid, host: h.host };
}

export function manageCellCommand(): Command {
  const cell = new Command('cell')
    .summary('cells, host mappings and host discovery (the compute tier)')
    .description(
      'Cells partition the compute tier: each has its own database (services, compute_nodes, ' +
        'instances) named by a URL in the API database, which also maps every compute host to its ' +
        'cell. The scheduler only places instances on nodes of mapped hosts.\n\n' +
        'Day zero (config management): map-cell0, create the cell, start the compute services, run ' +
        '`discover-hosts --by-service` once; nodes can then be enrolled at any time without ' +
        'discovering again. The scheduler also runs discovery every [scheduler] ' +
        'discover_hosts_interval seconds.',
    );

  cell
    .command('map-cell0')
    .summary('create the cell0 mapping (idempotent)')
    .description(
      'Map cell0, the cell (uuid 00000000-0000-0000-0000-000000000000) that holds instances which ' +
        'could not be scheduled. Its database is migrated (cell tables). Running it again changes ' +
        'nothing and exits 0. Default database: the API database itself.',
    )
    .option('--database-connection <url>', 'URL of the cell0 database (default: the API database)')
    .addOption(apiDatabaseOption())
    .addOption(formatOption())
    .action(async (opts: { databaseConnection?: string; format: OutputFormat }, command: Command) => {
      const ctx = commandContext(command, FLAGS);
      await withApi(ctx, true, async (api, cells) => {
        const { CELL0_UUID, mapCell0 } = await import('../../cells/index.js');
        const before = await api.db.selectFrom('cell_mappings').select('id').where('uuid', '=', CELL0_UUID).executeTakeFirst();
        const cell0 = await mapCell0(api, cells, opts.databaseConnection ?? ctx.config.api_database.url);
        emit(opts.format, { ...cellJson(cell0), created: !before }, () =>
          before ? `Cell0 is already set up (${maskUrl(cell0.databaseConnection)}).` : renderRecord(cellRecord(cell0)),
        );
      });
    });

  cell
    .command('create')
    .summary('create a cell and migrate its database')
    .description(
      'Create a cell mapping: migrates the cell database (services, compute_nodes, instances), then ' +
        'records it in the API database. Exit 2 when the name, uuid or database is already a ' +
        "cell's (as nova-manage). Default database: [database] url.",
    )
    .requiredOption('--name <name>', 'cell name (letters, digits, _ . -); compute services join it with [compute] cell')
    .option('--database-connection <url>', 'URL of the cell database (default: [database] url)')
    .option('--uuid <uuid>', 'uuid of the cell (default: a random one)')
    .option('--disabled', 'create the cell disabled (no new instances are placed in it)')
    .addOption(apiDatabaseOption())
    .addOption(formatOption())
    .action(async (opts: { name: string; databaseConnection?: string; uuid?: string; disabled?: boolean; format: OutputFormat }, command: Command) => {
      const ctx = commandContext(command, FLAGS);
      await withApi(ctx, true, async (api, cells) => {
        const { createCell } = await import('../../cells/index.js');
        const created = await createCell(api, cells, {
          name: opts.name,
          databaseConnection: opts.databaseConnection ?? ctx.config.database.url,
          ...(opts.uuid !== undefined ? { uuid: opts.uuid } : {}),
          disabled: opts.disabled ?? false,
        });
        emit(opts.format, cellJson(created), () => renderRecord(cellRecord(created)));
      });
    });

  cell
    .command('list')
    .summary('list the cells')
    .description('List the cells by name, with their database URLs (passwords masked).')
    .addOption(apiDatabaseOption())
    .addOption(formatOption())
    .action(async (opts: { format: OutputFormat }, command: Command) => {
      const ctx = commandContext(command, FLAGS);
      await withApi(ctx, false, async (api) => {
        const { listCells } = await import('../../cells/index.js');
        const all = await listCells(api);
        emit(opts.format, all.map(cellJson), () =>
          renderTable(all, [
            { header: 'Name', value: (c) => c.name },
            { header: 'UUID', value: (c) => c.uuid },
            { header: 'Database Connection', value: (c) => maskUrl(c.databaseConnection) },
            { header: 'Disabled', value: (c) => c.disabled },
          ]),
        );
      });
    });

  cell
    .command('delete')
    .summary('delete an empty cell')
    .description(
      'Delete a cell mapping (the cell database is left as it is). Refused while hosts are mapped ' +
        'to the cell (exit 2) unless --force, which deletes their mappings too and marks the ' +
        "cell's compute nodes and services unmapped; always refused while the cell has instances " +
        '(exit 3). Exit 1 when there is no such cell.',
    )
    .argument('<cell>', 'cell name or uuid')
    .option('--force', 'also delete the host mappings (and mappings of deleted instances) of the cell')
    .addOption(apiDatabaseOption())
    .addOption(formatOption())
    .action(async (which: string, opts: { force?: boolean; format: OutputFormat }, command: Command) => {
      const ctx = commandContext(command, FLAGS);
      await withApi(ctx, false, async (api, cells) => {
        const { deleteCell } = await import('../../cells/index.js');
        const out = await deleteCell(api, cells, which, { force: opts.force ?? false });
        emit(
          opts.format,
          { deleted: cellJson(out.cell), hosts_deleted: out.hostsDeleted, instance_mappings_deleted: out.instanceMappingsDeleted },
          () =>
            `Deleted cell ${out.cell.name} (${out.cell.uuid})` +
            (out.hostsDeleted.length ? ` and the mappings of ${out.hostsDeleted.length} host(s): ${out.hostsDeleted.join(', ')}.` : '.'),
        );
      });
    });

  cell
    .command('list-hosts')
    .summary('list host mappings')
    .description('List the compute hosts mapped to cells, by host name; --cell narrows to one cell (exit 1 if it does not exist).')
    .option('--cell <cell>', 'only hosts of this cell (name or uuid)')
    .addOption(apiDatabaseOption())
    .addOption(formatOption())
    .action(async (opts: { cell?: string; format: OutputFormat }, command: Command) => {
      const ctx = commandContext(command, FLAGS);
      await withApi(ctx, false, async (api) => {
        const { listHosts } = await import('../../cells/index.js');
        const hosts = await listHosts(api, opts.cell !== undefined ? { cell: opts.cell } : {});
        emit(opts.format, hosts.map(hostJson), () =>
          renderTable(hosts, [
            { header: 'Cell Name', value: (h) => h.cellName },
            { header: 'Cell UUID', value: (h) => h.cellUuid },
            { header: 'Hostname', value: (h) => h.host },
          ]),
        );
      });
    });

  cell
    .command('delete-host')
    .summary("delete a host's mapping")
    .description(
      "Delete a host's mapping to its cell and mark its compute nodes and services unmapped (so " +
        'discovery maps it again while its compute service still runs). Exit codes as nova-manage: ' +
        '1 no such cell, 2 host not mapped, 3 host mapped to another cell, 4 host has instances.',
    )
    .requiredOption('--cell <cell>', 'cell name or uuid')
    .requiredOption('--host <host>', 'compute host name')
    .addOption(apiDatabaseOption())
    .addOption(formatOption())
    .action(async (opts: { cell: string; host: string; format: OutputFormat }, command: Command) => {
      const ctx = commandContext(command, FLAGS);
      await withApi(ctx, false, async (api, cells) => {
        const { deleteHost } = await import('../../cells/index.js');
        const out = await deleteHost(api, cells, { cell: opts.cell, host: opts.host });
        emit(opts.format, { deleted: { host: out.host, cell_uuid: out.cell.uuid, cell_name: out.cell.name } }, () =>
          `Deleted the mapping of host ${out.host} to cell ${out.cell.name} (${out.cell.uuid}).`,
        );
      });
    });

  cell
    .command('discover-hosts')
    .summary('map unmapped compute hosts to their cells')
    .description(
      'Search every cell (or one) for compute hosts without a mapping and map them. By default the ' +
        'hosts of unmapped compute nodes; with --by-service also every compute service, even one ' +
        'with no nodes yet — use it at day zero, before nodes are enrolled. A run with nothing new ' +
        'costs one query per cell. Runs may overlap (several schedulers, config-management on many ' +
        'hosts): each mapping is created once and every run succeeds.\n\n' +
        'Exit codes: 0; 1 with --strict when no new host was mapped, or when a cell database could ' +
        'not be searched; 2 when a host found in one cell is already mapped to another (the other ' +
        'hosts are still mapped).',
    )
    .option('--cell <cell>', 'only this cell (name or uuid)')
    .option('--by-service', 'also map hosts of compute services that have no unmapped compute nodes (even none at all)')
    .option('--strict', 'exit 1 unless at least one new host was mapped')
    .option('--verbose', 'print progress per cell and each mapping created')
    .addOption(apiDatabaseOption())
    .addOption(formatOption())
    .action(async (opts: { cell?: string; byService?: boolean; strict?: boolean; verbose?: boolean; format: OutputFormat }, command: Command) => {
      const ctx = commandContext(command, FLAGS);
      const result = await withApi(ctx, false, async (api, cells) => {
        const { discoverHosts } = await import('../../cells/index.js');
        // Progress goes to stdout like nova-manage's, except with JSON, which owns stdout.
        const say = (line: string) => (opts.format === 'json' ? process.stderr : process.stdout).write(`${line}\n`);
        return discoverHosts(api, cells, {
          byService: opts.byService ?? false,
          ...(opts.cell !== undefined ? { cell: opts.cell } : {}),
          ...(opts.verbose ? { onStatus: say } : {}),
        });
      });
      emit(opts.format, discoveryJson(result), () => discoverySummary(result));
      for (const c of result.conflicts) {
        process.stderr.write(
          `ironring: host ${c.host} found in cell ${c.cellName} (${c.cellUuid}) is already mapped to cell ${c.mappedCellName} (${c.mappedCellUuid}); ` +
            `if it moved, run \`ironring manage cell delete-host --cell ${c.mappedCellUuid} --host ${c.host}\` and discover again\n`,
        );
      }
      for (const f of result.failedCells) process.stderr.write(`ironring: cell ${f.cellName} (${f.cellUuid}) could not be searched: ${f.message}\n`);
      process.exitCode = discoveryExitCode(result, opts.strict ?? false);
    });

  return cell;
}

function discoveryJson(result: DiscoveryResult) {
  return {
    mapped: result.mapped.map((m) => ({ host: m.host, cell_uuid: m.cellUuid, cell_name: m.cellName })),
    cells_checked: result.cellsChecked,
    conflicts: result.conflicts.map((c) => ({
      host: c.host,
      cell_uuid: c.cellUuid,
      cell_name: c.cellName,
      mapped_cell_uuid: c.mappedCellUuid,
      mapped_cell_name: c.mappedCellName,
    })),
    failed_cells: result.failedCells.map((f) => ({ cell_uuid: f.cellUuid, cell_name: f.cellName, message: f.message })),
  };
}

function discoverySummary(result: DiscoveryResult): string {
  const n = result.mapped.length;
  const cells = `${result.cellsChecked} cell${result.cellsChecked === 1 ? '' : 's'}`;
  return n === 0 ? `No new hosts to map in ${cells}.` : `Mapped ${n} new host${n === 1 ? '' : 's'} in ${cells}.`;
}

/** 2 for a host claimed by two cells (Nova's code for a mapping collision), 1 for an unsearchable cell or --strict with nothing new. */
export function discoveryExitCode(result: DiscoveryResult, strict: boolean): number {
  if (result.conflicts.length > 0) return 2;
  if (result.failedCells.length > 0) return 1;
  if (strict && result.mapped.length === 0) return 1;
  return 0;
}
