/** `ironring chassis …`: chassis (named groups of nodes) through the API, like `baremetal chassis`. */
import { Command } from 'commander';
import { UsageError } from '../../common/errors.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import { emit, renderRecord, renderTable } from '../output.js';
import { keyValues, objectFrom } from './node.js';

type ChassisJson = Record<string, unknown> & { uuid: string; description: string | null; extra?: Record<string, unknown> };

const collect = (value: string, previous: string[] = []) => [...previous, value];
const path = (uuid: string) => `/v1/chassis/${encodeURIComponent(uuid)}`;

/** A chassis as `show` prints it: its fields without the links. */
function shown(c: ChassisJson): Record<string, unknown> {
  const { links: _links, nodes: _nodes, ...fields } = c;
  return fields;
}

export function chassisCommand(): Command {
  const chassis = new Command('chassis').description('manage chassis (named groups of nodes) through the API (like `baremetal chassis`)');

  withClientOptions(chassis.command('create').description('create a chassis'))
    .option('--description <text>', 'what the chassis is (at most 255 characters)')
    .option('--extra <key=value>', 'extra entry (repeatable)', collect)
    .option('--uuid <uuid>', 'chassis uuid (default: generated)')
    .action(async (opts: { description?: string; extra?: string[]; uuid?: string }, command: Command) => {
      const { base, format } = clientContext(command);
      const extra = objectFrom(opts.extra, 'extra');
      const body = {
        ...(opts.description !== undefined ? { description: opts.description } : {}),
        ...(extra !== undefined ? { extra } : {}),
        ...(opts.uuid !== undefined ? { uuid: opts.uuid } : {}),
      };
      const c = await apiRequest<ChassisJson>(base, 'POST', '/v1/chassis', body);
      emit(format, c, () => renderRecord(shown(c)));
    });

  withClientOptions(chassis.command('list').description('list chassis'))
    .option('--long', 'show every field')
    .action(async (opts: { long?: boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const all: ChassisJson[] = [];
      let next: string | undefined = '/v1/chassis?detail=True';
      while (next) {
        const page: { chassis: ChassisJson[]; next?: string } = await apiRequest(base, 'GET', next);
        all.push(...page.chassis);
        next = page.next ? page.next.replace(/^https?:\/\/[^/]+/, '') : undefined;
      }
      emit(format, all, () =>
        renderTable(all, [
          { header: 'UUID', value: (c) => c.uuid },
          { header: 'Description', value: (c) => c.description },
          ...(opts.long
            ? [
                { header: 'Extra', value: (c: ChassisJson) => c.extra },
                { header: 'Created At', value: (c: ChassisJson) => c.created_at },
                { header: 'Updated At', value: (c: ChassisJson) => c.updated_at },
              ]
            : []),
        ]),
      );
    });

  withClientOptions(chassis.command('show').description('show one chassis').argument('<chassis>', 'chassis uuid'))
    .action(async (uuid: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const c = await apiRequest<ChassisJson>(base, 'GET', path(uuid));
      emit(format, c, () => renderRecord(shown(c)));
    });

  for (const [verb, op] of [['set', 'add'], ['unset', 'remove']] as const) {
    withClientOptions(chassis.command(verb).description(verb === 'set' ? 'change chassis fields' : 'remove chassis fields').argument('<chassis>', 'chassis uuid'))
      .option(verb === 'set' ? '--description <text>' : '--description', verb === 'set' ? 'new description' : 'remove the description')
      .option(`--extra <${verb === 'set' ? 'key=value' : 'key'}>`, 'extra entry (repeatable)', collect)
      .action(async (uuid: string, opts: { description?: string | boolean; extra?: string[] }, command: Command) => {
        const { base, format } = clientContext(command);
        const patch: Array<Record<string, unknown>> = [];
        if (opts.description !== undefined) patch.push(op === 'remove' ? { op, path: '/description' } : { op, path: '/description', value: opts.description });
        patch.push(...keyValues('extra', opts.extra, op));
        if (patch.length === 0) throw new UsageError(`chassis ${verb}: name at least one field to ${verb === 'set' ? 'change' : 'remove'}`);
        const c = await apiRequest<ChassisJson>(base, 'PATCH', path(uuid), patch);
        emit(format, c, () => renderRecord(shown(c)));
      });
  }

  withClientOptions(chassis.command('delete').description('delete chassis (only ones no node belongs to)').argument('<chassis...>', 'chassis uuids'))
    .action(async (uuids: string[], _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      for (const uuid of uuids) {
        await apiRequest(base, 'DELETE', path(uuid));
        process.stdout.write(`Deleted chassis ${uuid}\n`);
      }
    });

  return chassis;
}
