/**
 * How client and operator commands print results: a table for people (default) or JSON for
 * scripts (`--format json`). Everything goes through here so every command formats the same way.
 */
import Table from 'cli-table3';
import { Option } from 'commander';

export const OUTPUT_FORMATS = ['table', 'json'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The `--format` option every command that prints data accepts. */
export function formatOption(): Option {
  return new Option('-f, --format <format>', 'output format').choices(OUTPUT_FORMATS).default('table');
}

/** A column of a table: the heading and how to read the cell from a row. */
export interface Column<Row> {
  header: string;
  value: (row: Row) => unknown;
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** No rule between body rows, as OpenStack's CLI prints tables. */
const CHARS = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };

/** Renders rows as a bordered table, the way OpenStack's CLI prints lists. */
export function renderTable<Row>(rows: readonly Row[], columns: readonly Column<Row>[]): string {
  const table = new Table({ head: columns.map((c) => c.header), style: { head: [], border: [] }, chars: CHARS });
  for (const row of rows) table.push(columns.map((c) => cell(c.value(row))));
  return table.toString();
}

/** Renders one object as a two-column Field/Value table, like `openstack … show`. */
export function renderRecord(record: Record<string, unknown>): string {
  const table = new Table({ head: ['Field', 'Value'], style: { head: [], border: [] }, chars: CHARS });
  for (const [key, value] of Object.entries(record)) table.push([key, cell(value)]);
  return table.toString();
}

/** Writes `data` in the chosen format; `table` gets the rendered text. */
export function emit(format: OutputFormat, data: unknown, table: () => string): void {
  process.stdout.write(format === 'json' ? `${JSON.stringify(data, null, 2)}\n` : `${table()}\n`);
}
