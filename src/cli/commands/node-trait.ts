/**
 * `ironring node trait list|add|remove|set`: a node's traits (API 1.37), as `baremetal node trait
 * list`, `node add trait` and `node remove trait` do. Traits are checked by the API, whose 400 names
 * the bad one.
 */
import type { Command } from 'commander';
import { UsageError } from '../../common/errors.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import { emit, renderTable } from '../output.js';

const path = (ident: string, trait?: string) => `/v1/nodes/${encodeURIComponent(ident)}/traits${trait === undefined ? '' : `/${encodeURIComponent(trait)}`}`;

export function addTraitCommands(node: Command): void {
  const trait = node.command('trait').description('list, add, remove or set the traits of a node (CUSTOM_… or os-traits names; at most 50)');
  withClientOptions(trait.command('list').description("list a node's traits").argument('<node>', 'node uuid or name'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const { traits } = await apiRequest<{ traits: string[] }>(base, 'GET', path(ident));
      emit(format, traits, () => renderTable(traits, [{ header: 'Traits', value: (t) => t }]));
    });
  withClientOptions(trait.command('add').description('add traits to a node (ones it has stay)').argument('<node>', 'node uuid or name').argument('<traits...>', 'traits to add'))
    .action(async (ident: string, traits: string[], _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      for (const t of traits) await apiRequest(base, 'PUT', path(ident, t));
      process.stdout.write(`Added ${traits.join(', ')} to node ${ident}\n`);
    });
  withClientOptions(trait.command('remove').description('remove traits from a node').argument('<node>', 'node uuid or name').argument('[traits...]', 'traits to remove'))
    .option('--all', 'remove every trait')
    .action(async (ident: string, traits: string[], opts: { all?: boolean }, command: Command) => {
      if ((opts.all === true) === traits.length > 0) throw new UsageError('give the traits to remove, or --all (not both)');
      const { base } = clientContext(command);
      if (opts.all === true) await apiRequest(base, 'DELETE', path(ident));
      else for (const t of traits) await apiRequest(base, 'DELETE', path(ident, t));
      process.stdout.write(`Removed ${opts.all === true ? 'every trait' : traits.join(', ')} from node ${ident}\n`);
    });
  withClientOptions(trait.command('set').description("replace a node's traits with these (none: remove them all)").argument('<node>', 'node uuid or name').argument('[traits...]', 'the traits the node has afterwards'))
    .action(async (ident: string, traits: string[], _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      await apiRequest(base, 'PUT', path(ident), { traits });
      process.stdout.write(`Set the traits of node ${ident} to ${traits.length === 0 ? 'none' : traits.join(', ')}\n`);
    });
}
