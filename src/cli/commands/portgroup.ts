/** `ironring portgroup …`: port groups (bonded NICs of one node) through the API, like `baremetal port group`. */
import { Command } from 'commander';
import { UsageError } from '../../common/errors.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import type { ApiEndpoint } from '../client.js';
import { emit, renderRecord, renderTable } from '../output.js';
import { keyValues, objectFrom } from './node.js';

type PortgroupJson = Record<string, unknown> & { uuid: string; name: string | null; address: string | null; node_uuid?: string };

const collect = (value: string, previous: string[] = []) => [...previous, value];
const path = (ident: string) => `/v1/portgroups/${encodeURIComponent(ident)}`;

/** A port group as `show` prints it: its fields without the links. */
function shown(g: PortgroupJson): Record<string, unknown> {
  const { links: _links, ports: _ports, ...fields } = g;
  return fields;
}

/** The node's uuid: the API takes a uuid only, the command a name too. */
async function nodeUuid(base: ApiEndpoint, node: string): Promise<string> {
  return (await apiRequest<{ uuid: string }>(base, 'GET', `/v1/nodes/${encodeURIComponent(node)}`)).uuid;
}

interface GroupOptions {
  node?: string;
  address?: string | boolean;
  name?: string | boolean;
  mode?: string;
  extra?: string[];
  property?: string[];
  supportStandalonePorts?: boolean;
  unsupportStandalonePorts?: boolean;
}

/** `--support-standalone-ports` / `--unsupport-standalone-ports`: at most one. */
function standalone(opts: GroupOptions): boolean | undefined {
  if (opts.supportStandalonePorts && opts.unsupportStandalonePorts) throw new UsageError('--support-standalone-ports and --unsupport-standalone-ports: give at most one');
  return opts.supportStandalonePorts ? true : opts.unsupportStandalonePorts ? false : undefined;
}

export function portgroupCommand(): Command {
  const group = new Command('portgroup').description("manage nodes' port groups (bonded NICs) through the API (like `baremetal port group`)");

  withClientOptions(group.command('create').description('create a port group on a node'))
    .requiredOption('--node <node>', 'node uuid or name')
    .option('--address <mac>', 'MAC address of the group')
    .option('--name <name>', 'logical name of the group')
    .option('--mode <mode>', 'bonding mode (default: active-backup)')
    .option('--extra <key=value>', 'extra entry (repeatable)', collect)
    .option('--property <key=value>', 'property of the bond (repeatable)', collect)
    .option('--support-standalone-ports', 'its ports may also be used on their own (the default)')
    .option('--unsupport-standalone-ports', 'its ports may not be used on their own')
    .option('--uuid <uuid>', 'port group uuid (default: generated)')
    .action(async (opts: GroupOptions & { uuid?: string }, command: Command) => {
      const { base, format } = clientContext(command);
      const extra = objectFrom(opts.extra, 'extra');
      const properties = objectFrom(opts.property, 'properties');
      const supported = standalone(opts);
      const body = {
        node_uuid: await nodeUuid(base, opts.node!),
        ...(typeof opts.address === 'string' ? { address: opts.address } : {}),
        ...(typeof opts.name === 'string' ? { name: opts.name } : {}),
        ...(opts.mode !== undefined ? { mode: opts.mode } : {}),
        ...(extra !== undefined ? { extra } : {}),
        ...(properties !== undefined ? { properties } : {}),
        ...(supported !== undefined ? { standalone_ports_supported: supported } : {}),
        ...(opts.uuid !== undefined ? { uuid: opts.uuid } : {}),
      };
      const g = await apiRequest<PortgroupJson>(base, 'POST', '/v1/portgroups', body);
      emit(format, g, () => renderRecord(shown(g)));
    });

  withClientOptions(group.command('list').description('list port groups'))
    .option('--node <node>', 'only the groups of this node')
    .option('--address <mac>', 'only the group with this MAC address')
    .option('--long', 'show every field')
    .action(async (opts: { node?: string; address?: string; long?: boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const params = new URLSearchParams({ detail: 'True' });
      if (opts.node) params.set('node', opts.node);
      if (opts.address) params.set('address', opts.address);
      const all: PortgroupJson[] = [];
      let next: string | undefined = `/v1/portgroups?${params.toString()}`;
      while (next) {
        const page: { portgroups: PortgroupJson[]; next?: string } = await apiRequest(base, 'GET', next);
        all.push(...page.portgroups);
        next = page.next ? page.next.replace(/^https?:\/\/[^/]+/, '') : undefined;
      }
      emit(format, all, () =>
        renderTable(all, [
          { header: 'UUID', value: (g) => g.uuid },
          { header: 'Address', value: (g) => g.address },
          { header: 'Name', value: (g) => g.name },
          ...(opts.long
            ? [
                { header: 'Node UUID', value: (g: PortgroupJson) => g.node_uuid },
                { header: 'Mode', value: (g: PortgroupJson) => g.mode },
                { header: 'Standalone Ports Supported', value: (g: PortgroupJson) => g.standalone_ports_supported },
                { header: 'Properties', value: (g: PortgroupJson) => g.properties },
                { header: 'Extra', value: (g: PortgroupJson) => g.extra },
              ]
            : []),
        ]),
      );
    });

  withClientOptions(group.command('show').description('show one port group').argument('<group>', 'port group uuid or name'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const g = await apiRequest<PortgroupJson>(base, 'GET', path(ident));
      emit(format, g, () => renderRecord(shown(g)));
    });

  withClientOptions(group.command('set').description('change port group fields').argument('<group>', 'port group uuid or name'))
    .option('--node <node>', 'move the group (without ports) to this node')
    .option('--address <mac>', 'new MAC address')
    .option('--name <name>', 'new name')
    .option('--mode <mode>', 'new bonding mode')
    .option('--extra <key=value>', 'extra entry (repeatable)', collect)
    .option('--property <key=value>', 'property (repeatable)', collect)
    .option('--support-standalone-ports', 'its ports may also be used on their own')
    .option('--unsupport-standalone-ports', 'its ports may not be used on their own')
    .action(async (ident: string, opts: GroupOptions, command: Command) => {
      const { base, format } = clientContext(command);
      const patch: Array<Record<string, unknown>> = [];
      const replace = (field: string, value: unknown) => patch.push({ op: 'add', path: `/${field}`, value });
      if (opts.node !== undefined) replace('node_uuid', await nodeUuid(base, opts.node));
      for (const field of ['address', 'name', 'mode'] as const) if (typeof opts[field] === 'string') replace(field, opts[field]);
      const supported = standalone(opts);
      if (supported !== undefined) replace('standalone_ports_supported', supported);
      patch.push(...keyValues('extra', opts.extra, 'add'), ...keyValues('properties', opts.property, 'add'));
      if (patch.length === 0) throw new UsageError('portgroup set: name at least one field to change');
      const g = await apiRequest<PortgroupJson>(base, 'PATCH', path(ident), patch);
      emit(format, g, () => renderRecord(shown(g)));
    });

  withClientOptions(group.command('unset').description('remove port group fields').argument('<group>', 'port group uuid or name'))
    .option('--address', 'remove the MAC address')
    .option('--name', 'remove the name')
    .option('--extra <key>', 'extra key (repeatable)', collect)
    .option('--property <key>', 'property key (repeatable)', collect)
    .action(async (ident: string, opts: GroupOptions, command: Command) => {
      const { base, format } = clientContext(command);
      const patch: Array<Record<string, unknown>> = [];
      for (const field of ['address', 'name'] as const) if (opts[field] === true) patch.push({ op: 'remove', path: `/${field}` });
      patch.push(...keyValues('extra', opts.extra, 'remove'), ...keyValues('properties', opts.property, 'remove'));
      if (patch.length === 0) throw new UsageError('portgroup unset: name at least one field to remove');
      const g = await apiRequest<PortgroupJson>(base, 'PATCH', path(ident), patch);
      emit(format, g, () => renderRecord(shown(g)));
    });

  withClientOptions(group.command('delete').description('delete port groups (only ones no port belongs to)').argument('<groups...>', 'port group uuids or names'))
    .action(async (idents: string[], _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      for (const ident of idents) {
        await apiRequest(base, 'DELETE', path(ident));
        process.stdout.write(`Deleted port group ${ident}\n`);
      }
    });

  return group;
}
