/**
 * The API's JSON shape of a node, as the Ironic API shows it at a given microversion: fields that
 * appeared later are hidden from older clients, secrets in `driver_info` and `instance_info` are
 * masked, and links point at the node, its ports and its states.
 */
import { MASKED, maskSecrets } from '../../common/mask.js';
import type { NodeRow } from '../../nodes/node-store.js';
import { apiTime, resourceLinks } from '../links.js';
import { compareVersions } from '../microversions.js';
import type { Microversion } from '../microversions.js';

/** Re-exported: the masking rules live with the other secret-hiding code. */
export { MASKED, maskSecrets };

/** Every node field and the microversion it appeared in. */
export const NODE_FIELDS: Readonly<Record<string, Microversion>> = {
  uuid: [1, 1], name: [1, 5], chassis_uuid: [1, 1], driver: [1, 1], driver_info: [1, 1], driver_internal_info: [1, 1], extra: [1, 1],
  instance_info: [1, 1], instance_uuid: [1, 1], properties: [1, 1], provision_state: [1, 1],
  target_provision_state: [1, 1], provision_updated_at: [1, 1], power_state: [1, 1], target_power_state: [1, 1],
  maintenance: [1, 1], maintenance_reason: [1, 1], last_error: [1, 1], reservation: [1, 1], console_enabled: [1, 1],
  created_at: [1, 1], updated_at: [1, 1], inspection_started_at: [1, 6], inspection_finished_at: [1, 6],
  clean_step: [1, 7], raid_config: [1, 12], target_raid_config: [1, 12], network_interface: [1, 20],
  resource_class: [1, 21], boot_interface: [1, 31], console_interface: [1, 31], deploy_interface: [1, 31],
  inspect_interface: [1, 31], management_interface: [1, 31], power_interface: [1, 31], vendor_interface: [1, 31],
  rescue_interface: [1, 38], fault: [1, 42], conductor_group: [1, 46], protected: [1, 48], protected_reason: [1, 48],
  conductor: [1, 49],
  // ironring extensions: where the ring places the node and which conductor's boot files are current.
  conductor_replicas: [1, 49], conductor_affinity: [1, 49],
};

/** Fields of a list without `detail`, as Ironic. */
export const NODE_LIST_FIELDS = ['uuid', 'name', 'instance_uuid', 'power_state', 'provision_state', 'maintenance'] as const;

const fieldsByVersion = new Map<string, string[]>();

/** The node fields a microversion shows (computed once per version). */
export function fieldsAt(version: Microversion): string[] {
  const key = `${version[0]}.${version[1]}`;
  let fields = fieldsByVersion.get(key);
  if (fields === undefined) {
    fields = Object.entries(NODE_FIELDS)
      .filter(([, since]) => compareVersions(version, since) >= 0)
      .map(([name]) => name);
    fieldsByVersion.set(key, fields);
  }
  return fields;
}

export interface NodeViewContext {
  base: string;
  version: Microversion;
  /** The conductor the ring gives the node to, for the `conductor` field. */
  conductorOf: (node: NodeRow) => string | null;
  /** The replica conductors after the owner, for `conductor_replicas`. */
  replicasOf?: (node: NodeRow) => string[];
  /** Hostname of a conductor row id, for `conductor_affinity`. */
  conductorName?: (id: number | null) => string | null;
}

/** `driver_internal_info.clean_step` when it is an object, else {} (Ironic's value when no step runs). */
function cleanStepOf(info: Readonly<Record<string, unknown>>): unknown {
  const step = info.clean_step;
  return typeof step === 'object' && step !== null && !Array.isArray(step) ? step : {};
}

type Getter = ((node: NodeRow, ctx: NodeViewContext) => unknown) & { column?: keyof NodeRow };
const column = (name: keyof NodeRow): Getter => Object.assign((node: NodeRow) => node[name], { column: name });
/** A field ironring does not model yet, with the value Ironic shows for it; a fresh value each time. */
const constant =
  (make: () => unknown): Getter =>
  () => make();

/**
 * How each API field is read from a node row, and which columns it needs — so a list that shows
 * six fields reads six columns, not forty.
 */
const FIELD_GETTERS: Readonly<Record<string, { get: Getter; columns: ReadonlyArray<keyof NodeRow> }>> = {
  uuid: { get: column('uuid'), columns: ['uuid'] },
  name: { get: column('name'), columns: ['name'] },
  chassis_uuid: { get: constant(() => null), columns: [] },
  driver: { get: column('driver'), columns: ['driver'] },
  driver_info: { get: (n) => maskSecrets(n.driver_info), columns: ['driver_info'] },
  driver_internal_info: { get: column('driver_internal_info'), columns: ['driver_internal_info'] },
  extra: { get: column('extra'), columns: ['extra'] },
  instance_info: { get: (n) => maskSecrets(n.instance_info), columns: ['instance_info'] },
  instance_uuid: { get: column('instance_uuid'), columns: ['instance_uuid'] },
  properties: { get: column('properties'), columns: ['properties'] },
  provision_state: { get: column('provision_state'), columns: ['provision_state'] },
  target_provision_state: { get: column('target_provision_state'), columns: ['target_provision_state'] },
  provision_updated_at: { get: (n) => apiTime(n.provision_updated_at), columns: ['provision_updated_at'] },
  power_state: { get: column('power_state'), columns: ['power_state'] },
  target_power_state: { get: column('target_power_state'), columns: ['target_power_state'] },
  maintenance: { get: column('maintenance'), columns: ['maintenance'] },
  maintenance_reason: { get: column('maintenance_reason'), columns: ['maintenance_reason'] },
  last_error: { get: column('last_error'), columns: ['last_error'] },
  reservation: { get: column('reservation'), columns: ['reservation'] },
  console_enabled: { get: constant(() => false), columns: [] },
  created_at: { get: (n) => apiTime(n.created_at), columns: ['created_at'] },
  updated_at: { get: (n) => apiTime(n.updated_at), columns: ['updated_at'] },
  inspection_started_at: { get: constant(() => null), columns: [] },
  inspection_finished_at: { get: constant(() => null), columns: [] },
  // The step a clean is running now ({} otherwise), which the conductor keeps in driver_internal_info.
  clean_step: { get: (n) => cleanStepOf(n.driver_internal_info), columns: ['driver_internal_info'] },
  raid_config: { get: constant(() => ({})), columns: [] },
  target_raid_config: { get: constant(() => ({})), columns: [] },
  network_interface: { get: column('network_interface'), columns: ['network_interface'] },
  resource_class: { get: column('resource_class'), columns: ['resource_class'] },
  boot_interface: { get: column('boot_interface'), columns: ['boot_interface'] },
  console_interface: { get: column('console_interface'), columns: ['console_interface'] },
  deploy_interface: { get: column('deploy_interface'), columns: ['deploy_interface'] },
  inspect_interface: { get: column('inspect_interface'), columns: ['inspect_interface'] },
  management_interface: { get: column('management_interface'), columns: ['management_interface'] },
  power_interface: { get: column('power_interface'), columns: ['power_interface'] },
  vendor_interface: { get: column('vendor_interface'), columns: ['vendor_interface'] },
  rescue_interface: { get: column('rescue_interface'), columns: ['rescue_interface'] },
  fault: { get: constant(() => null), columns: [] },
  conductor_group: { get: column('conductor_group'), columns: ['conductor_group'] },
  protected: { get: constant(() => false), columns: [] },
  protected_reason: { get: constant(() => null), columns: [] },
  conductor: { get: (n, ctx) => ctx.conductorOf(n), columns: ['uuid', 'conductor_group'] },
  conductor_replicas: { get: (n, ctx) => ctx.replicasOf?.(n) ?? [], columns: ['uuid', 'conductor_group'] },
  conductor_affinity: { get: (n, ctx) => ctx.conductorName?.(n.conductor_affinity) ?? null, columns: ['conductor_affinity'] },
};

/** The columns needed to render `fields` (the uuid always, for links). */
export function columnsFor(fields: readonly string[]): Array<keyof NodeRow> {
  const columns = new Set<keyof NodeRow>(['uuid']);
  for (const f of fields) for (const c of FIELD_GETTERS[f]?.columns ?? []) columns.add(c);
  return [...columns];
}

type Renderer = (node: NodeRow, ctx: NodeViewContext) => Record<string, unknown>;
const renderers = new Map<string, Renderer>();
const renderersByArray = new WeakMap<readonly string[], Renderer>();

/**
 * One function per field list that builds the node's object in a single literal: plain columns are
 * read as named properties, the rest through their getters. A detail list renders 1,000 nodes of
 * ~45 fields; looping over the field names with keyed reads and writes cost several times more.
 * The names come from `NODE_FIELDS` only (requests' `fields` are checked against it first).
 */
function rendererFor(fields: readonly string[]): Renderer {
  // The same array (a version's fields) comes back for every node: no key to build then.
  const known = renderersByArray.get(fields);
  if (known !== undefined) return known;
  const key = fields.join(',');
  let render = renderers.get(key);
  if (render === undefined) {
    const getters = fields.map((f) => FIELD_GETTERS[f]!.get);
    const parts = fields.map((f, i) => {
      const col = getters[i]!.column;
      return `${JSON.stringify(f)}: ${col !== undefined ? `n[${JSON.stringify(col)}]` : `g[${i}](n, ctx)`}`;
    });
    render = new Function('g', `return function render(n, ctx) { return { ${parts.join(', ')} }; };`)(getters) as Renderer;
    renderers.set(key, render);
  }
  renderersByArray.set(fields, render);
  return render;
}

/** Renders a node with the given fields (all fields of the version when omitted). */
export function renderNode(node: NodeRow, ctx: NodeViewContext, fields?: readonly string[], withResourceLinks = true): Record<string, unknown> {
  const out = rendererFor(fields ?? fieldsAt(ctx.version))(node, ctx);
  out.links = resourceLinks(ctx.base, 'nodes', node.uuid);
  if (withResourceLinks && fields === undefined) {
    out.ports = resourceLinks(ctx.base, `nodes/${node.uuid}`, 'ports');
    out.states = resourceLinks(ctx.base, `nodes/${node.uuid}`, 'states');
  }
  return out;
}
