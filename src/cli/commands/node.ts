/**
 * `ironring node …`: the operator's node commands against a running API — the same operations as
 * the stock `baremetal node …` client, table output by default and `--format json` for scripts.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { checkConfigDriveSpec } from '../../boot/config-drive-iso.js';
import { InvalidParameter, UsageError } from '../../common/errors.js';
import { parseCleanSteps } from '../../drivers/clean-steps.js';
import type { CleanStepRequest } from '../../drivers/clean-steps.js';
import { FAKE_HARDWARE } from '../../drivers/fake/fake-hardware.js';
import { INTERFACE_TYPES, interfaceField } from '../../drivers/hardware-type.js';
import type { InterfaceType } from '../../drivers/hardware-type.js';
import { IPMI_HARDWARE } from '../../drivers/ipmi/ipmi-hardware.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import { addTraitCommands } from './node-trait.js';
import { addLaterFieldOptions, addLaterListOptions, addLaterNodeCommands, laterFieldPatch, laterListParams } from './node-later.js';
import { addNodeExtraCommands } from './node-extras.js';
import { emit, renderRecord, renderTable } from '../output.js';
import { nodeFailure, waitForNode, WaitFailed, waitSeconds } from '../wait.js';

type NodeJson = Record<string, unknown> & { uuid: string; name: string | null; provision_state: string; target_provision_state?: string | null };

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The command-line flag that fills each JSON field. */
const FLAG_OF: Record<string, string> = { driver_info: 'driver-info', properties: 'property', extra: 'extra', instance_info: 'instance-info' };

/** Parses repeated `key=value` flags into a JSON Patch under `/field/`; values are JSON when they parse. */
export function keyValues(field: string, pairs: string[] | undefined, op: 'add' | 'remove'): Array<Record<string, unknown>> {
  return (pairs ?? []).map((pair) => {
    if (op === 'remove') return { op, path: `/${field}/${pair}` };
    const i = pair.indexOf('=');
    if (i <= 0) throw new UsageError(`--${FLAG_OF[field] ?? field}: expected key=value, got ${JSON.stringify(pair)}`);
    const raw = pair.slice(i + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // a plain string
    }
    return { op, path: `/${field}/${pair.slice(0, i)}`, value };
  });
}

/** Repeated `key=value` flags as an object (values JSON when they parse); undefined without any. */
export function objectFrom(pairs: string[] | undefined, flag: string): Record<string, unknown> | undefined {
  if (!pairs) return undefined;
  return Object.fromEntries(keyValues(flag, pairs, 'add').map((op) => [String(op.path).split('/').slice(2).join('/'), op.value]));
}



/** `--boot-interface` and the like: the flag, its commander key and the node field it patches. */
const INTERFACE_FLAGS = INTERFACE_TYPES.map((type) => ({
  type,
  flag: `${type}-interface`,
  key: `${type}Interface`,
  field: interfaceField(type),
}));

/** "pxe, ipxe (ipmi); fake, pxe, ipxe (fake-hardware)": the names `--<type>-interface` accepts, from the hardware types. */
function interfaceChoices(type: InterfaceType): string {
  return [IPMI_HARDWARE, FAKE_HARDWARE].map((h) => `${h.supported[type].join(', ')} (${h.name})`).join('; ');
}

const CLEAN_STEPS_EXAMPLE = '[{"interface": "deploy", "step": "erase_devices_metadata"}]';

/**
 * `--clean-steps`: a JSON list, `@file` holding one, or `-` for standard input (as `baremetal node
 * clean --clean-steps` takes a file or `-`). Checked here with the API's own schema, so a typo is
 * one line naming the entry, not a round trip; whether the node offers the steps is the API's call.
 */
export function readCleanSteps(value: string): CleanStepRequest[] {
  const { parsed, from } = readJsonArgument('--clean-steps', value, `a list such as ${CLEAN_STEPS_EXAMPLE}`);
  try {
    return parseCleanSteps(parsed);
  } catch (err) {
    if (err instanceof InvalidParameter) throw new UsageError(`${err.message.replace(/^clean_steps/, '--clean-steps')}${from}`);
    throw err;
  }
}

/** A JSON option's value: the JSON itself, `@file` holding it, or `-` for standard input. */
function readJsonArgument(flag: string, value: string, expected: string): { parsed: unknown; from: string } {
  let text = value;
  let from = '';
  if (value === '-' || value.startsWith('@')) {
    const file = value === '-' ? 0 : value.slice(1);
    from = value === '-' ? ' (standard input)' : ` (${value.slice(1)})`;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new UsageError(`${flag}: cannot read ${value === '-' ? 'standard input' : value.slice(1)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  try {
    return { parsed: JSON.parse(text) as unknown, from };
  } catch (err) {
    throw new UsageError(`${flag}${from}: not valid JSON (${(err as Error).message.split('\n')[0]}); expected ${expected}`);
  }
}

const CONFIG_DRIVE_EXAMPLE = '{"meta_data": {"hostname": "web-1"}, "user_data": "#cloud-config\\n..."}';

/**
 * `node deploy --config-drive`: the config drive's JSON form (meta_data, network_data, user_data,
 * vendor_data), as JSON, `@file` or `-`. Set as instance_info/configdrive, which the conductor
 * builds into the config-2 ISO (the provision request's own field takes an object only from API
 * 1.56, above what ironring serves).
 */
export function configDriveInstanceInfo(value: string | undefined): Array<Record<string, unknown>> {
  if (value === undefined) return [];
  const { parsed, from } = readJsonArgument('--config-drive', value, `an object such as ${CONFIG_DRIVE_EXAMPLE}`);
  try {
    checkConfigDriveSpec(parsed, '--config-drive');
  } catch (err) {
    if (err instanceof InvalidParameter) throw new UsageError(`${err.message}${from}`);
    throw err;
  }
  return [{ op: 'add', path: '/instance_info/configdrive', value: parsed }];
}

/** The instance_info patch of `node deploy --image URL --image-checksum algo:hex`; [] without --image. */
export function imageInstanceInfo(image: string | undefined, checksum: string | undefined): Array<Record<string, unknown>> {
  if (image === undefined) {
    if (checksum !== undefined) throw new UsageError('--image-checksum: only with --image');
    return [];
  }
  if (!/^https?:\/\/\S+$/.test(image)) throw new UsageError(`--image: expected an http:// or https:// URL, got ${JSON.stringify(image)}`);
  if (checksum === undefined) throw new UsageError('--image-checksum: required with --image (e.g. sha256:<hex>); every image is verified');
  const m = /^(sha256|sha384|sha512):([0-9a-fA-F]+)$/.exec(checksum);
  const lengths: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };
  if (!m || m[2]!.length !== lengths[m[1]!]) throw new UsageError(`--image-checksum: expected sha256:<64 hex>, sha384:<96 hex> or sha512:<128 hex>, got ${JSON.stringify(checksum.slice(0, 140))}`);
  return [
    { op: 'add', path: '/instance_info/image_source', value: image },
    { op: 'add', path: '/instance_info/image_os_hash_algo', value: m[1] },
    { op: 'add', path: '/instance_info/image_os_hash_value', value: m[2]!.toLowerCase() },
  ];
}

const PROVISION: Array<[string, string, string, string]> = [
  ['manage', 'manage', 'manageable', 'move a node to manageable (verifies its BMC credentials)'],
  ['provide', 'provide', 'available', 'make a manageable node available for deployment (after cleaning)'],
  ['deploy', 'active', 'active', 'deploy an available node'],
  ['undeploy', 'deleted', 'available', 'tear down a deployed node and clean it back to available'],
  ['clean', 'clean', 'manageable', 'clean a manageable node: run exactly the --clean-steps given, in order (manual cleaning)'],
  ['inspect', 'inspect', 'manageable', "inspect a manageable node: its agent reports the hardware, which sets properties and ports (`node inventory` shows it)"],
  ['rescue', 'rescue', 'rescue', 'boot an active node into the rescue ramdisk, with a login for user rescue (--rescue-password)'],
  ['unrescue', 'unrescue', 'active', 'boot a rescued node back into its instance'],
  ['adopt', 'adopt', 'active', 'take a manageable node that already runs its instance to active, without deploying'],
  ['abort', 'abort', '', 'abort the operation a waiting node is in'],
];

/**
 * `--rescue-password`: the password itself, or `-` for the first line of standard input (which
 * keeps it out of the process list and the shell's history).
 */
export function readRescuePassword(value: string): string {
  if (value !== '-') return value;
  let text: string;
  try {
    text = readFileSync(0, 'utf8');
  } catch (err) {
    throw new UsageError(`--rescue-password: cannot read standard input: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const line = text.split(/\r?\n/)[0] ?? '';
  if (line.trim() === '') throw new UsageError('--rescue-password: standard input held no password');
  return line;
}

/** The parts of an inventory the summary shows (any may be missing from what an agent sent). */
interface Inventory {
  cpu?: { count?: number; architecture?: string; model_name?: string | null };
  memory?: { physical_mb?: number; total?: number };
  disks?: Array<{ name?: string; size?: number; serial?: string | null }>;
  interfaces?: Array<{ name?: string; mac_address?: string; ipv4_address?: string | null }>;
  system_vendor?: { manufacturer?: string; product_name?: string; serial_number?: string };
  boot?: { current_boot_mode?: string; pxe_interface?: string | null };
}

/** One line per part of an inventory, for people (`--format json` gives the whole document). */
function inventorySummary(inv: Inventory, plugin: Record<string, unknown>): Record<string, unknown> {
  const gib = (bytes: number | undefined) => (bytes === undefined ? '?' : `${(bytes / 2 ** 30).toFixed(1)} GiB`);
  const root = (plugin.root_disk as { name?: string } | null | undefined)?.name;
  return {
    system: [inv.system_vendor?.manufacturer, inv.system_vendor?.product_name, inv.system_vendor?.serial_number].filter((p) => p).join(' ') || '?',
    cpus: `${inv.cpu?.count ?? '?'} × ${inv.cpu?.architecture ?? '?'}${inv.cpu?.model_name ? ` (${inv.cpu.model_name})` : ''}`,
    memory: `${inv.memory?.physical_mb ?? (inv.memory?.total !== undefined ? Math.floor(inv.memory.total / 2 ** 20) : '?')} MiB`,
    disks: (inv.disks ?? []).map((d) => `${d.name ?? '?'} ${gib(d.size)}${d.serial ? ` serial ${d.serial}` : ''}${d.name === root ? ' (root)' : ''}`).join('; ') || 'none',
    interfaces: (inv.interfaces ?? []).map((i) => `${i.name ?? '?'} ${i.mac_address ?? '?'}${i.ipv4_address ? ` ${i.ipv4_address}` : ''}${i.mac_address === inv.boot?.pxe_interface ? ' (booted from)' : ''}`).join('; ') || 'none',
    boot_mode: inv.boot?.current_boot_mode ?? '?',
    local_gb: plugin.local_gb ?? '?',
  };
}

export function nodeCommand(): Command {
  const node = new Command('node').description('manage bare-metal nodes through the API (like `baremetal node`)');

  const list = withClientOptions(node.command('list').description('list nodes'))
    .addOption(new Option('--provision-state <state>', 'only nodes in this provision state'))
    .addOption(new Option('--driver <driver>', 'only nodes with this hardware type'))
    .addOption(new Option('--conductor-group <group>', 'only nodes of this conductor group'))
    .addOption(new Option('--resource-class <class>', 'only nodes of this resource class'))
    .addOption(new Option('--maintenance', 'only nodes in maintenance'))
    .addOption(new Option('--long', 'show more columns'));
  addLaterListOptions(list);
  list.action(async (opts: { provisionState?: string; driver?: string; conductorGroup?: string; resourceClass?: string; maintenance?: boolean; long?: boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const params = new URLSearchParams({ detail: 'True' });
      if (opts.provisionState) params.set('provision_state', opts.provisionState);
      if (opts.driver) params.set('driver', opts.driver);
      if (opts.conductorGroup !== undefined) params.set('conductor_group', opts.conductorGroup);
      if (opts.resourceClass) params.set('resource_class', opts.resourceClass);
      if (opts.maintenance) params.set('maintenance', 'True');
      laterListParams(opts, params);
      const nodes: NodeJson[] = [];
      let path: string | undefined = `/v1/nodes?${params.toString()}`;
      while (path) {
        const page: { nodes: NodeJson[]; next?: string } = await apiRequest(base, 'GET', path);
        nodes.push(...page.nodes);
        path = page.next ? page.next.replace(/^https?:\/\/[^/]+/, '') : undefined;
      }
      emit(format, nodes, () =>
        renderTable(nodes, [
          { header: 'UUID', value: (n) => n.uuid },
          { header: 'Name', value: (n) => n.name },
          { header: 'Instance UUID', value: (n) => n.instance_uuid },
          { header: 'Power State', value: (n) => n.power_state },
          { header: 'Provisioning State', value: (n) => n.provision_state },
          { header: 'Maintenance', value: (n) => n.maintenance },
          ...(opts.long ? [{ header: 'Driver', value: (n: NodeJson) => n.driver }, { header: 'Conductor', value: (n: NodeJson) => n.conductor }] : []),
        ]),
      );
    });

  withClientOptions(node.command('show').description('show one node').argument('<node>', 'node uuid or name'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const n = await apiRequest<NodeJson>(base, 'GET', `/v1/nodes/${encodeURIComponent(ident)}`);
      const { links: _l, ports: _p, states: _s, ...shown } = n;
      emit(format, n, () => renderRecord(shown));
    });

  withClientOptions(node.command('inventory').description("what the node's last inspection found: the agent's hardware inventory and what the conductor derived").argument('<node>', 'node uuid or name'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const found = await apiRequest<{ inventory: Inventory; plugin_data: Record<string, unknown> }>(base, 'GET', `/v1/nodes/${encodeURIComponent(ident)}/inventory`);
      emit(format, found, () => renderRecord(inventorySummary(found.inventory, found.plugin_data)));
    });

  const create = withClientOptions(node.command('create').description('enroll a node'));
  for (const { type, flag } of INTERFACE_FLAGS) create.option(`--${flag} <name>`, `${type} interface implementation: ${interfaceChoices(type)}`);
  create
    .requiredOption('--driver <driver>', 'hardware type, e.g. ipmi or fake-hardware')
    .option('--name <name>', 'unique node name')
    .option('--uuid <uuid>', 'node uuid (default: generated)')
    .option('--resource-class <class>', 'resource class for scheduling')
    .option('--conductor-group <group>', 'conductor group')
    .option('--driver-info <key=value>', 'driver_info entry (repeatable), e.g. ipmi_address=10.0.0.5', collect)
    .option('--property <key=value>', 'properties entry (repeatable)', collect)
    .option('--extra <key=value>', 'extra entry (repeatable)', collect)
    .action(async (opts: { driver: string; name?: string; uuid?: string; resourceClass?: string; conductorGroup?: string; driverInfo?: string[]; property?: string[]; extra?: string[] } & Record<string, unknown>, command: Command) => {
      const { base, format } = clientContext(command);
      const body: Record<string, unknown> = { driver: opts.driver };
      for (const { key, field } of INTERFACE_FLAGS) if (typeof opts[key] === 'string') body[field] = opts[key];
      if (opts.name !== undefined) body.name = opts.name;
      if (opts.uuid !== undefined) body.uuid = opts.uuid;
      if (opts.resourceClass !== undefined) body.resource_class = opts.resourceClass;
      if (opts.conductorGroup !== undefined) body.conductor_group = opts.conductorGroup;
      const driverInfo = objectFrom(opts.driverInfo, 'driver_info');
      if (driverInfo) body.driver_info = driverInfo;
      const properties = objectFrom(opts.property, 'properties');
      if (properties) body.properties = properties;
      const extra = objectFrom(opts.extra, 'extra');
      if (extra) body.extra = extra;
      const n = await apiRequest<NodeJson>(base, 'POST', '/v1/nodes', body);
      emit(format, n, () => renderRecord({ uuid: n.uuid, name: n.name, driver: n.driver, provision_state: n.provision_state }));
    });

  for (const [verb, op] of [['set', 'add'], ['unset', 'remove']] as const) {
    const cmd = withClientOptions(node.command(verb).description(verb === 'set' ? 'change node fields' : 'remove node fields').argument('<node>', 'node uuid or name'))
      .option('--name' + (verb === 'set' ? ' <name>' : ''), verb === 'set' ? 'new name' : 'remove the name')
      .option('--resource-class' + (verb === 'set' ? ' <class>' : ''), 'resource class')
      .option('--conductor-group' + (verb === 'set' ? ' <group>' : ''), 'conductor group')
      .option(`--driver-info <${verb === 'set' ? 'key=value' : 'key'}>`, 'driver_info entry (repeatable)', collect)
      .option(`--property <${verb === 'set' ? 'key=value' : 'key'}>`, 'properties entry (repeatable)', collect)
      .option(`--extra <${verb === 'set' ? 'key=value' : 'key'}>`, 'extra entry (repeatable)', collect)
      .option(`--instance-info <${verb === 'set' ? 'key=value' : 'key'}>`, 'instance_info entry (repeatable)', collect);
    if (verb === 'set') {
      cmd
        .option('--driver <driver>', 'change the hardware type (ipmi, fake-hardware); the node keeps its interfaces, each of which the new type must enable, unless --reset-interfaces')
        .option('--reset-interfaces', 'with --driver: reset every interface not given in this command to the new hardware type\'s default (API 1.45 reset_interfaces)');
    }
    for (const { type, flag } of INTERFACE_FLAGS) {
      cmd.option(
        verb === 'set' ? `--${flag} <name>` : `--${flag}`,
        verb === 'set' ? `${type} interface implementation: ${interfaceChoices(type)}` : `reset the ${type} interface to the hardware type's default`,
      );
    }
    addLaterFieldOptions(cmd, verb);
    if (verb === 'set') cmd.addHelpText('after', '\nThe keys each interface reads from driver_info and instance_info: docs/driver-fields.md.');
    cmd.action(async (ident: string, opts: Record<string, string | string[] | boolean | undefined>, command: Command) => {
      const { base, format } = clientContext(command);
      const patch: Array<Record<string, unknown>> = [];
      const scalars = [['name', 'name'], ['resourceClass', 'resource_class'], ['conductorGroup', 'conductor_group'], ['driver', 'driver'], ...INTERFACE_FLAGS.map((f) => [f.key, f.field] as const)] as const;
      for (const [flag, field] of scalars) {
        const v = opts[flag];
        if (v === undefined) continue;
        patch.push(op === 'remove' ? { op: 'remove', path: `/${field}` } : { op: 'add', path: `/${field}`, value: v });
      }
      for (const [flag, field] of [['driverInfo', 'driver_info'], ['property', 'properties'], ['extra', 'extra'], ['instanceInfo', 'instance_info']] as const) {
        patch.push(...keyValues(field, opts[flag] as string[] | undefined, op));
      }
      patch.push(...laterFieldPatch(opts, op));
      if (patch.length === 0) throw new UsageError(`node ${verb}: name at least one field to ${verb === 'set' ? 'change' : 'remove'}`);
      if (opts.resetInterfaces === true && opts.driver === undefined) throw new UsageError('--reset-interfaces: only with --driver');
      const query = opts.resetInterfaces === true ? '?reset_interfaces=true' : '';
      const n = await apiRequest<NodeJson>(base, 'PATCH', `/v1/nodes/${encodeURIComponent(ident)}${query}`, patch);
      const changed = Object.fromEntries(scalars.filter(([flag]) => opts[flag] !== undefined && flag !== 'name').map(([, field]) => [field, n[field]]));
      emit(format, n, () => renderRecord({ uuid: n.uuid, name: n.name, ...changed, driver_info: n.driver_info, properties: n.properties, extra: n.extra }));
    });
  }

  addLaterNodeCommands(node);

  withClientOptions(node.command('delete').description('delete nodes (enroll, manageable or available ones)').argument('<nodes...>', 'node uuids or names'))
    .action(async (idents: string[], _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      for (const ident of idents) {
        await apiRequest(base, 'DELETE', `/v1/nodes/${encodeURIComponent(ident)}`);
        process.stdout.write(`Deleted node ${ident}\n`);
      }
    });

  for (const [verb, target, settled, description] of PROVISION) {
    const cmd = withClientOptions(node.command(verb).description(description).argument('<node>', 'node uuid or name'));
    // Manual cleaning runs exactly the steps asked for; the API refuses a clean without them (as Ironic does).
    if (verb === 'clean') {
      cmd.requiredOption(
        '--clean-steps <steps>',
        `the steps to run, in order: a JSON list of {"interface", "step", "args"?} objects, @file holding one, or - for standard input; e.g. '${CLEAN_STEPS_EXAMPLE}'`,
      );
      cmd.option('--disable-ramdisk', 'clean without booting the ramdisk (API 1.70 disable_ramdisk): only out-of-band steps, which need no agent, are accepted; the others are refused');
    }
    if (verb === 'rescue') {
      cmd.requiredOption('--rescue-password <password>', 'the password of user rescue in the rescue ramdisk, or - to read it from standard input; the API keeps only its crypt hash');
    }
    if (verb === 'deploy') {
      cmd
        .addOption(new Option('--image <url>', 'the whole-disk image to write (direct deploy): sets instance_info.image_source first'))
        .addOption(new Option('--image-checksum <algo:hex>', "the image's digest, e.g. sha256:<hex> (sha256, sha384 or sha512): sets image_os_hash_algo/value; required with --image"))
        .addOption(
          new Option(
            '--config-drive <json>',
            `the config drive (direct deploy) as an object of meta_data, network_data, user_data and vendor_data, @file holding one, or - for standard input; the conductor builds the config-2 ISO the agent writes; e.g. '${CONFIG_DRIVE_EXAMPLE}'`,
          ),
        );
    }
    cmd
      .addOption(
        new Option(
          '--wait [seconds]',
          `wait until the node rests (default 600 s): exit 0 when it ${settled ? `is ${settled}` : 'rests'}; exit 1 with its last_error on stderr as soon as it fails (a "* failed" state, error, or a rest elsewhere such as enroll after a failed BMC check)`,
        ),
      )
      .action(async (ident: string, opts: { wait?: string | boolean; cleanSteps?: string; disableRamdisk?: boolean; image?: string; imageChecksum?: string; configDrive?: string; rescuePassword?: string }, command: Command) => {
        const seconds = waitSeconds(opts.wait, 600);
        const cleanSteps = opts.cleanSteps !== undefined ? readCleanSteps(opts.cleanSteps) : undefined;
        const rescuePassword = opts.rescuePassword !== undefined ? readRescuePassword(opts.rescuePassword) : undefined;
        const imagePatch = [...imageInstanceInfo(opts.image, opts.imageChecksum), ...configDriveInstanceInfo(opts.configDrive)];
        const { base, format } = clientContext(command);
        if (imagePatch.length > 0) await apiRequest(base, 'PATCH', `/v1/nodes/${encodeURIComponent(ident)}`, imagePatch);
        await apiRequest(base, 'PUT', `/v1/nodes/${encodeURIComponent(ident)}/states/provision`, {
          target,
          ...(cleanSteps !== undefined ? { clean_steps: cleanSteps } : {}),
          ...(rescuePassword !== undefined ? { rescue_password: rescuePassword } : {}),
          ...(opts.disableRamdisk === true ? { disable_ramdisk: true } : {}),
        });
        if (seconds === null) return void process.stdout.write(`Requested ${verb} of node ${ident}\n`);
        const n = await waitForNode(base, ident, seconds);
        const failure = nodeFailure(n, settled);
        // Scripts still get the node on stdout; people get the reason once, on stderr.
        if (failure === null || format === 'json') emit(format, n, () => `node ${ident} is ${n.provision_state}`);
        if (failure !== null) throw new WaitFailed(`${verb} of node ${ident} failed: ${failure}`);
      });
  }

  withClientOptions(node.command('power').description('power a node on or off, or reboot it').argument('<action>', 'on, off or reboot').argument('<node>', 'node uuid or name'))
    .action(async (action: string, ident: string, _opts: unknown, command: Command) => {
      const targets: Record<string, string> = { on: 'power on', off: 'power off', reboot: 'rebooting' };
      const target = targets[action];
      if (!target) throw new UsageError(`node power: action must be on, off or reboot, got ${JSON.stringify(action)}`);
      const { base } = clientContext(command);
      await apiRequest(base, 'PUT', `/v1/nodes/${encodeURIComponent(ident)}/states/power`, { target });
      process.stdout.write(`Requested ${target} of node ${ident}\n`);
    });

  const boot = node.command('boot-device').description("set or show a node's boot device");
  withClientOptions(boot.command('set').description('set the boot device').argument('<node>', 'node uuid or name').argument('<device>', 'pxe, disk, cdrom, bios or safe'))
    .option('--persistent', 'keep it for every boot, not just the next')
    .action(async (ident: string, device: string, opts: { persistent?: boolean }, command: Command) => {
      const { base } = clientContext(command);
      await apiRequest(base, 'PUT', `/v1/nodes/${encodeURIComponent(ident)}/management/boot_device`, { boot_device: device, persistent: opts.persistent ?? false });
      process.stdout.write(`Set boot device of node ${ident} to ${device}\n`);
    });
  withClientOptions(boot.command('show').description('show the boot device').argument('<node>', 'node uuid or name'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const dev = await apiRequest<Record<string, unknown>>(base, 'GET', `/v1/nodes/${encodeURIComponent(ident)}/management/boot_device`);
      emit(format, dev, () => renderRecord(dev));
    });

  addTraitCommands(node);
  addNodeExtraCommands(node);
  return node;
}
