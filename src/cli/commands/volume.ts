/**
 * `ironring volume connector …` and `ironring volume target …`: a node's storage connectors and
 * the volumes it boots from, through the API (API 1.32), like `baremetal volume connector|target`.
 * Both share one shape — list, show, create, set, unset, delete — so one builder serves both from a
 * table of their plain fields.
 */
import { Command } from 'commander';
import { UsageError } from '../../common/errors.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import { emit, renderRecord, renderTable } from '../output.js';
import { keyValues, objectFrom } from './node.js';

type VolumeJson = Record<string, unknown> & { uuid: string };

/** One plain (non-JSON) field a command takes as a flag. */
interface FlagSpec {
  field: string;
  flag: string;
  /** Commander's key for the flag. */
  key: string;
  help: string;
  /** Required by create. */
  required?: true;
  /** Sent as a number (boot_index). */
  integer?: true;
}

interface KindSpec {
  /** `connector` or `target`. */
  name: string;
  /** The API collection and the list's key. */
  collection: 'connectors' | 'targets';
  flags: readonly FlagSpec[];
  /** JSON fields set with key=value, repeatable. */
  json: readonly string[];
  /** The list's columns (header, field), as `baremetal volume … list` shows them. */
  columns: ReadonlyArray<[string, string]>;
}

const KINDS: readonly KindSpec[] = [
  {
    name: 'connector',
    collection: 'connectors',
    flags: [
      { field: 'node_uuid', flag: '--node <uuid>', key: 'node', help: 'uuid of the node the connector belongs to', required: true },
      { field: 'type', flag: '--type <type>', key: 'type', help: 'connector type: iqn, ip, mac, wwnn, wwpn, port or portgroup', required: true },
      { field: 'connector_id', flag: '--connector-id <id>', key: 'connectorId', help: 'the connector id (an IQN, an IP, a WWPN…)', required: true },
    ],
    json: ['extra'],
    columns: [['UUID', 'uuid'], ['Node UUID', 'node_uuid'], ['Type', 'type'], ['Connector ID', 'connector_id']],
  },
  {
    name: 'target',
    collection: 'targets',
    flags: [
      { field: 'node_uuid', flag: '--node <uuid>', key: 'node', help: 'uuid of the node the target belongs to', required: true },
      { field: 'volume_type', flag: '--type <type>', key: 'type', help: 'volume type (iscsi, fibre_channel…)', required: true },
      { field: 'volume_id', flag: '--volume-id <id>', key: 'volumeId', help: 'the id of the volume in the storage service', required: true },
      { field: 'boot_index', flag: '--boot-index <n>', key: 'bootIndex', help: 'boot index of the volume (0 boots first)', required: true, integer: true },
    ],
    json: ['properties', 'extra'],
    columns: [['UUID', 'uuid'], ['Node UUID', 'node_uuid'], ['Driver Volume Type', 'volume_type'], ['Boot Index', 'boot_index'], ['Volume ID', 'volume_id']],
  },
];

const collect = (value: string, previous: string[] = []) => [...previous, value];
const flagName = (field: string) => `--${field.replace(/_/g, '-')}`;

/** A flag's value as the API takes it; a boot index must be an integer. */
function valueOf(spec: FlagSpec, raw: string): unknown {
  if (!spec.integer) return raw;
  if (!/^-?\d+$/.test(raw)) throw new UsageError(`${spec.flag.split(' ')[0]}: expected an integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** A resource as `show` prints it: its fields without the links. */
function shown(v: VolumeJson): Record<string, unknown> {
  const { links: _links, ...fields } = v;
  return fields;
}

function kindCommand(spec: KindSpec): Command {
  const cmd = new Command(spec.name).description(`manage volume ${spec.name}s through the API (like \`baremetal volume ${spec.name}\`)`);
  const path = (uuid: string) => `/v1/volume/${spec.collection}/${encodeURIComponent(uuid)}`;
  type Opts = Record<string, string | string[] | boolean | undefined>;

  const create = withClientOptions(cmd.command('create').description(`create a volume ${spec.name}`));
  for (const f of spec.flags) create.option(f.flag, f.help);
  for (const j of spec.json) create.option(`${flagName(j)} <key=value>`, `${j} entry (repeatable)`, collect);
  create.option('--uuid <uuid>', `volume ${spec.name} uuid (default: generated)`).action(async (opts: Opts, command: Command) => {
    const { base, format } = clientContext(command);
    const body: Record<string, unknown> = {};
    for (const f of spec.flags) {
      const raw = opts[f.key];
      if (typeof raw === 'string') body[f.field] = valueOf(f, raw);
      else if (f.required) throw new UsageError(`volume ${spec.name} create: ${f.flag.split(' ')[0]} is required`);
    }
    for (const j of spec.json) {
      const entries = objectFrom(opts[j] as string[] | undefined, j);
      if (entries !== undefined) body[j] = entries;
    }
    if (typeof opts.uuid === 'string') body.uuid = opts.uuid;
    const v = await apiRequest<VolumeJson>(base, 'POST', `/v1/volume/${spec.collection}`, body);
    emit(format, v, () => renderRecord(shown(v)));
  });

  withClientOptions(cmd.command('list').description(`list volume ${spec.name}s`))
    .option('--node <node>', 'only those of this node (uuid or name)')
    .option('--long', 'show every field')
    .action(async (opts: { node?: string; long?: boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const all: VolumeJson[] = [];
      let next: string | undefined = `/v1/volume/${spec.collection}?detail=True${opts.node !== undefined ? `&node=${encodeURIComponent(opts.node)}` : ''}`;
      while (next) {
        const page: Record<string, unknown> & { next?: string } = await apiRequest(base, 'GET', next);
        all.push(...(page[spec.collection] as VolumeJson[]));
        next = page.next ? page.next.replace(/^https?:\/\/[^/]+/, '') : undefined;
      }
      const columns = [...spec.columns, ...(opts.long ? spec.json.map((j): [string, string] => [j[0]!.toUpperCase() + j.slice(1), j]).concat([['Created At', 'created_at'], ['Updated At', 'updated_at']]) : [])];
      emit(format, all, () => renderTable(all, columns.map(([header, field]) => ({ header, value: (v: VolumeJson) => v[field] }))));
    });

  withClientOptions(cmd.command('show').description(`show one volume ${spec.name}`).argument('<uuid>', `volume ${spec.name} uuid`))
    .action(async (uuid: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const v = await apiRequest<VolumeJson>(base, 'GET', path(uuid));
      emit(format, v, () => renderRecord(shown(v)));
    });

  for (const [verb, op] of [['set', 'add'], ['unset', 'remove']] as const) {
    const sub = withClientOptions(cmd.command(verb).description(verb === 'set' ? `change volume ${spec.name} fields` : `remove volume ${spec.name} entries`).argument('<uuid>', `volume ${spec.name} uuid`));
    // Plain fields are all required by Ironic, so unset only removes JSON entries.
    if (verb === 'set') for (const f of spec.flags) sub.option(f.flag, f.help);
    for (const j of spec.json) sub.option(`${flagName(j)} <${verb === 'set' ? 'key=value' : 'key'}>`, `${j} entry (repeatable)`, collect);
    sub.action(async (uuid: string, opts: Opts, command: Command) => {
      const { base, format } = clientContext(command);
      const patch: Array<Record<string, unknown>> = [];
      if (verb === 'set') for (const f of spec.flags) if (typeof opts[f.key] === 'string') patch.push({ op: 'replace', path: `/${f.field}`, value: valueOf(f, opts[f.key] as string) });
      for (const j of spec.json) patch.push(...keyValues(j, opts[j] as string[] | undefined, op));
      if (patch.length === 0) throw new UsageError(`volume ${spec.name} ${verb}: name at least one field to ${verb === 'set' ? 'change' : 'remove'}`);
      const v = await apiRequest<VolumeJson>(base, 'PATCH', path(uuid), patch);
      emit(format, v, () => renderRecord(shown(v)));
    });
  }

  withClientOptions(cmd.command('delete').description(`delete volume ${spec.name}s (their node must be powered off)`).argument('<uuid...>', `volume ${spec.name} uuids`))
    .action(async (uuids: string[], _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      for (const uuid of uuids) {
        await apiRequest(base, 'DELETE', path(uuid));
        process.stdout.write(`Deleted volume ${spec.name} ${uuid}\n`);
      }
    });
  return cmd;
}

export function volumeCommand(): Command {
  const volume = new Command('volume').description("manage nodes' volume connectors and targets through the API (like `baremetal volume`)");
  for (const spec of KINDS) volume.addCommand(kindCommand(spec));
  return volume;
}
