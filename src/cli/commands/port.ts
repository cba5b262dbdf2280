/** `ironring port …`: a node's NICs (MAC addresses) through the API, like `baremetal port`. */
import { Command, Option } from 'commander';
import { NotFound, UsageError } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import type { ApiEndpoint } from '../client.js';
import { emit, renderRecord, renderTable } from '../output.js';
import { keyValues, objectFrom } from './node.js';

const collectPairs = (value: string, previous: string[] = []) => [...previous, value];

type PortJson = Record<string, unknown> & { uuid: string; address: string; node_uuid?: string };

/**
 * The API path of a port named by uuid or MAC address: the API finds ports by uuid only (as
 * Ironic's), so a MAC is looked up first with `?address=`.
 */
async function portPath(base: ApiEndpoint, ident: string): Promise<string> {
  if (UUID_PATTERN.test(ident)) return `/v1/ports/${encodeURIComponent(ident)}`;
  const { ports } = await apiRequest<{ ports: PortJson[] }>(base, 'GET', `/v1/ports?address=${encodeURIComponent(ident)}`);
  if (ports.length === 0) throw new NotFound(`port ${ident} could not be found`);
  return `/v1/ports/${ports[0]!.uuid}`;
}

export function portCommand(): Command {
  const port = new Command('port').description("manage nodes' ports (NICs) through the API (like `baremetal port`)");

  withClientOptions(port.command('create').description('add a port to a node').argument('<address>', 'MAC address'))
    .requiredOption('--node <node>', 'node uuid or name')
    .addOption(new Option('--no-pxe-enabled', 'this NIC does not network-boot'))
    .option('--port-group <group>', 'port group (uuid or name) of the same node the port belongs to')
    .option('--local-link-connection <key=value>', 'switch_id, port_id, switch_info, hostname or network_type of the link (repeatable)', collectPairs)
    .option('--is-smartnic', 'a Smart NIC port (its local link names the NIC\'s port_id and hostname)')
    .action(async (address: string, opts: { node: string; pxeEnabled: boolean; portGroup?: string; localLinkConnection?: string[]; isSmartnic?: boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const node = await apiRequest<{ uuid: string }>(base, 'GET', `/v1/nodes/${encodeURIComponent(opts.node)}`);
      const group = opts.portGroup === undefined ? undefined : await apiRequest<{ uuid: string }>(base, 'GET', `/v1/portgroups/${encodeURIComponent(opts.portGroup)}`);
      const link = objectFrom(opts.localLinkConnection, 'local-link-connection');
      const p = await apiRequest<PortJson>(base, 'POST', '/v1/ports', {
        address, node_uuid: node.uuid, pxe_enabled: opts.pxeEnabled, ...(group ? { portgroup_uuid: group.uuid } : {}),
        ...(link ? { local_link_connection: link } : {}), ...(opts.isSmartnic ? { is_smartnic: true } : {}),
      });
      emit(format, p, () => renderRecord({ uuid: p.uuid, address: p.address, node_uuid: p.node_uuid, pxe_enabled: p.pxe_enabled, portgroup_uuid: p.portgroup_uuid }));
    });

  withClientOptions(port.command('list').description('list ports'))
    .option('--node <node>', 'only ports of this node')
    .option('--address <mac>', 'only the port with this MAC address')
    .action(async (opts: { node?: string; address?: string }, command: Command) => {
      const { base, format } = clientContext(command);
      const params = new URLSearchParams({ detail: 'True' });
      if (opts.node) params.set('node', opts.node);
      if (opts.address) params.set('address', opts.address);
      const ports: PortJson[] = [];
      let path: string | undefined = `/v1/ports?${params.toString()}`;
      while (path) {
        const page: { ports: PortJson[]; next?: string } = await apiRequest(base, 'GET', path);
        ports.push(...page.ports);
        path = page.next ? page.next.replace(/^https?:\/\/[^/]+/, '') : undefined;
      }
      emit(format, ports, () =>
        renderTable(ports, [
          { header: 'UUID', value: (p) => p.uuid },
          { header: 'Address', value: (p) => p.address },
          { header: 'Node UUID', value: (p) => p.node_uuid },
          { header: 'PXE', value: (p) => p.pxe_enabled },
        ]),
      );
    });

  withClientOptions(port.command('show').description('show one port').argument('<port>', 'port uuid or MAC address'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const p = await apiRequest<PortJson>(base, 'GET', await portPath(base, ident));
      const { links: _links, ...shown } = p;
      emit(format, p, () => renderRecord(shown));
    });

  withClientOptions(port.command('set').description('change a port: its local link and whether it is a Smart NIC').argument('<port>', 'port uuid or MAC address'))
    .option('--local-link-connection <key=value>', 'set a key of the local link (repeatable)', collectPairs)
    .option('--is-smartnic', 'mark it a Smart NIC port')
    .option('--no-is-smartnic', 'mark it an ordinary port')
    .action(async (ident: string, opts: { localLinkConnection?: string[]; isSmartnic?: boolean }, command: Command) => {
      const patch = [
        ...keyValues('local_link_connection', opts.localLinkConnection, 'add'),
        ...(opts.isSmartnic !== undefined ? [{ op: 'replace', path: '/is_smartnic', value: opts.isSmartnic }] : []),
      ];
      if (patch.length === 0) throw new UsageError('nothing to change: give --local-link-connection or --[no-]is-smartnic');
      const { base, format } = clientContext(command);
      const p = await apiRequest<PortJson>(base, 'PATCH', await portPath(base, ident), patch);
      const { links: _links, ...shown } = p;
      emit(format, p, () => renderRecord(shown));
    });

  withClientOptions(port.command('delete').description('delete ports').argument('<ports...>', 'port uuids or MAC addresses'))
    .action(async (idents: string[], _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      for (const ident of idents) {
        await apiRequest(base, 'DELETE', await portPath(base, ident));
        process.stdout.write(`Deleted port ${ident}\n`);
      }
    });

  return port;
}
