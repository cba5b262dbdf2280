/**
 * The node commands of Ironic's API 1.61–1.82, as the stock client has them: `node set/unset`'s
 * `--retired`, `--retired-reason`, `--lessee`, `--network-data`, `--shard`; `node list`'s
 * `--retired/--no-retired`, `--lessee`, `--shard`, `--sharded/--unsharded`; `node boot-mode set`,
 * `node secure-boot on|off`; `node history list|show`; and `ironring shard list`. The API checks
 * every value (its 400 names the field).
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { UsageError } from '../../common/errors.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import { emit, renderRecord, renderTable } from '../output.js';

type Patch = Array<Record<string, unknown>>;

/** `--network-data`: JSON, `@file` holding it, or `-` for standard input. */
function readJson(flag: string, raw: string): unknown {
  const text = raw === '-' ? readFileSync(0, 'utf8') : raw.startsWith('@') ? readFileSync(raw.slice(1), 'utf8') : raw;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${flag}: not JSON (${(err as Error).message}); give the JSON itself, @file or -`);
  }
}

/** Adds the 1.61–1.82 field options to `node set` or `node unset`. */
export function addLaterFieldOptions(cmd: Command, verb: 'set' | 'unset'): void {
  const set = verb === 'set';
  cmd
    .option('--retired', set ? 'mark the node retired: it is not provided again, and its cleaning ends in manageable (API 1.61)' : 'the node is no longer retired (its reason goes too)')
    .option(set ? '--retired-reason <reason>' : '--retired-reason', set ? 'why the node is retired (only with retired)' : 'remove the reason the node is retired')
    .option(set ? '--lessee <project>' : '--lessee', set ? 'the project leasing the node (API 1.65)' : 'remove the lessee')
    .option(set ? '--network-data <json>' : '--network-data', set ? "static network configuration in Nova's network_data.json format: JSON, @file or - (API 1.66)" : 'remove the network data')
    .option(set ? '--shard <shard>' : '--shard', set ? 'the shard the node is in (API 1.82)' : 'take the node out of its shard');
}

/** The JSON Patch of the 1.61–1.82 options given to `node set` (`add`) or `node unset` (`remove`). */
export function laterFieldPatch(opts: Record<string, unknown>, op: 'add' | 'remove'): Patch {
  const patch: Patch = [];
  if (opts.retired === true) patch.push(op === 'add' ? { op, path: '/retired', value: true } : { op: 'replace', path: '/retired', value: false });
  for (const [key, field] of [['retiredReason', 'retired_reason'], ['lessee', 'lessee'], ['shard', 'shard'], ['networkData', 'network_data']] as const) {
    const value = opts[key];
    if (value === undefined) continue;
    if (op === 'remove') patch.push({ op, path: `/${field}` });
    else patch.push({ op, path: `/${field}`, value: field === 'network_data' ? readJson('--network-data', value as string) : value });
  }
  return patch;
}

/** Adds `node list`'s filters of 1.61–1.82 (`--retired`, `--lessee`, `--shard`, `--sharded`…). */
export function addLaterListOptions(cmd: Command): void {
  cmd
    .option('--retired', 'only retired nodes')
    .option('--no-retired', 'only nodes that are not retired')
    .option('--lessee <project>', 'only nodes of this lessee (API 1.65)')
    .option('--project <project>', 'only nodes whose owner or lessee is this project')
    .option('--shard <shards>', 'only nodes in these shards (comma-separated; API 1.82)')
    .option('--sharded', 'only nodes in a shard')
    .option('--unsharded', 'only nodes in no shard');
}

/** The query parameters of those filters. */
export function laterListParams(opts: Record<string, unknown>, params: URLSearchParams): void {
  if (opts.retired !== undefined) params.set('retired', opts.retired === true ? 'True' : 'False');
  for (const key of ['lessee', 'project', 'shard'] as const) if (typeof opts[key] === 'string') params.set(key, opts[key]);
  if (opts.sharded === true && opts.unsharded === true) throw new UsageError('--sharded and --unsharded: one or the other');
  if (opts.sharded === true) params.set('sharded', 'True');
  if (opts.unsharded === true) params.set('sharded', 'False');
}

interface HistoryEvent {
  uuid: string;
  created_at: string;
  severity: string;
  event: string;
  event_type?: string;
  conductor?: string | null;
  user?: string | null;
}

/** `node history list|show`, `node boot-mode set`, `node secure-boot on|off`. */
export function addLaterNodeCommands(node: Command): void {
  const history = node.command('history').description("what a node's conductors recorded about it (API 1.78)");
  withClientOptions(history.command('list').description("list a node's events, oldest first").argument('<node>', 'node uuid or name'))
    .option('--long', 'every field, and each event in full')
    .action(async (ident: string, opts: { long?: boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const events: HistoryEvent[] = [];
      let path: string | undefined = `/v1/nodes/${encodeURIComponent(ident)}/history${opts.long === true ? '?detail=True' : ''}`;
      while (path) {
        const page: { history: HistoryEvent[]; next?: string } = await apiRequest(base, 'GET', path);
        events.push(...page.history);
        path = page.next ? page.next.replace(/^https?:\/\/[^/]+/, '') : undefined;
      }
      emit(format, events, () =>
        renderTable(events, [
          { header: 'UUID', value: (e) => e.uuid },
          { header: 'Created At', value: (e) => e.created_at },
          { header: 'Severity', value: (e) => e.severity },
          ...(opts.long === true ? [{ header: 'Event Type', value: (e: HistoryEvent) => e.event_type }, { header: 'Conductor', value: (e: HistoryEvent) => e.conductor }, { header: 'User', value: (e: HistoryEvent) => e.user }] : []),
          { header: 'Event', value: (e) => e.event },
        ]),
      );
    });
  withClientOptions(history.command('show').description('show one event in full').argument('<node>', 'node uuid or name').argument('<event>', 'event uuid'))
    .action(async (ident: string, event: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const e = await apiRequest<HistoryEvent & { links?: unknown }>(base, 'GET', `/v1/nodes/${encodeURIComponent(ident)}/history/${encodeURIComponent(event)}`);
      const { links: _links, ...shown } = e;
      emit(format, e, () => renderRecord(shown));
    });

  const bootMode = node.command('boot-mode').description("change a node's firmware boot mode through its management interface (API 1.76)");
  withClientOptions(bootMode.command('set').description('set the boot mode; the node shows it as boot_mode once done').argument('<node>', 'node uuid or name').argument('<mode>', 'uefi or bios'))
    .action(async (ident: string, mode: string, _opts: unknown, command: Command) => {
      if (mode !== 'uefi' && mode !== 'bios') throw new UsageError(`<mode>: uefi or bios, not ${JSON.stringify(mode)}`);
      const { base } = clientContext(command);
      await apiRequest(base, 'PUT', `/v1/nodes/${encodeURIComponent(ident)}/states/boot_mode`, { target: mode });
      process.stdout.write(`Requested boot mode ${mode} for node ${ident}\n`);
    });
  const secureBoot = node.command('secure-boot').description("turn a node's UEFI secure boot on or off through its management interface (API 1.76)");
  for (const state of ['on', 'off'] as const) {
    withClientOptions(secureBoot.command(state).description(`turn secure boot ${state}; the node shows it as secure_boot once done`).argument('<node>', 'node uuid or name'))
      .action(async (ident: string, _opts: unknown, command: Command) => {
        const { base } = clientContext(command);
        await apiRequest(base, 'PUT', `/v1/nodes/${encodeURIComponent(ident)}/states/secure_boot`, { target: state === 'on' });
        process.stdout.write(`Requested secure boot ${state} for node ${ident}\n`);
      });
  }
}

/** `ironring shard list`: each shard with its number of nodes (API 1.82). */
export function shardCommand(): Command {
  const shard = new Command('shard').description('the shards nodes are in (like `baremetal shard`)');
  withClientOptions(shard.command('list').description('list shards with their node counts, most nodes first (nodes in no shard count under None)'))
    .action(async (_opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const { shards } = await apiRequest<{ shards: Array<{ name: string; count: number }> }>(base, 'GET', '/v1/shards');
      emit(format, shards, () => renderTable(shards, [{ header: 'Name', value: (s) => s.name }, { header: 'Count', value: (s) => s.count }]));
    });
  return shard;
}
