/**
 * The API's JSON shape of a node, as the Ironic API shows it at a given microversion: fields that
 * appeared later are hidden from older clients, secrets in `driver_info` and `instance_info` are
 * masked, and links point at the node, its ports and its states.
 */
import type { NodeRow } from '../../nodes/node-store.js';
import { apiTime, resourceLinks } from '../links.js';
import { compareVersions } from '../microversions.js';
import type { Microversion } from '../microversions.js';

export const MASKED = '******';

/** Every node field and the microversion it appeared in. */
export const NODE_FIELDS: Readonly<Record<string, Microversion>> = {
  uuid: [1, 1], name: [1, 5], driver: [1, 1], driver_info: [1, 1], driver_internal_info: [1, 1], extra: [1, 1],
  instance_info: [1, 1], instance_uuid: [1, 1], properties: [1, 1], provision_state: [1, 1],
  target_provision_state: [1, 1], provision_updated_at: [1, 1], power_state: [1, 1], target_power_state: [1, 1],
  maintenance: [1, 1], maintenance_reason: [1, 1], last_error: [1, 1], reservation: [1, 1], console_enabled: [1, 1],
  created_at: [1, 1], updated_at: [1, 1], inspection_started_at: [1, 6], inspection_finished_at: [1, 6],
  clean_step: [1, 7], raid_config: [1, 12], target_raid_config: [1, 12], network_interface: [1, 20],
  resource_class: [1, 21], boot_interface: [1, 31], console_interface: [1, 31], deploy_interface: [1, 31],
  inspect_interface: [1, 31], management_interface: [1, 31], power_interface: [1, 31], vendor_interface: [1, 31],
  rescue_interface: [1, 38], fault: [1, 42], conductor_group: [1, 46], protected: [1, 48], protected_reason: [1, 48],
  conductor: [1, 49],
};

/** Fields of a list without `detail`, as Ironic. */
export const NODE_LIST_FIELDS = ['uuid', 'name', 'instance_uuid', 'power_state', 'provision_state', 'maintenance'] as const;

export function fieldsAt(version: Microversion): string[] {
  return Object.entries(NODE_FIELDS)
    .filter(([, since]) => compareVersions(version, since) >= 0)
    .map(([name]) => name);
}

/** Masks values whose key names a secret (`*password*`, `configdrive`), at any depth. */
export function maskSecrets(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (/password|secret|configdrive/i.test(k) && v !== null && v !== '') out[k] = MASKED;
    else if (v !== null && typeof v === 'object' && !Array.isArray(v)) out[k] = maskSecrets(v as Record<string, unknown>);
    else out[k] = v;
  }
  return out;
}

export interface NodeViewContext {
  base: string;
  version: Microversion;
  /** The conductor the ring gives the node to, for the `conductor` field. */
  conductorOf: (node: NodeRow) => string | null;
}

/** The full field set of a node; `render` picks from it. */
function allFields(node: NodeRow, ctx: NodeViewContext): Record<string, unknown> {
  return {
    uuid: node.uuid,
    name: node.name,
    driver: node.driver,
    driver_info: maskSecrets(node.driver_info),
    driver_internal_info: node.driver_internal_info,
    extra: node.extra,
    instance_info: maskSecrets(node.instance_info),
    instance_uuid: node.instance_uuid,
    properties: node.properties,
    provision_state: node.provision_state,
    target_provision_state: node.target_provision_state,
    provision_updated_at: apiTime(node.provision_updated_at),
    power_state: node.power_state,
    target_power_state: node.target_power_state,
    maintenance: node.maintenance,
    maintenance_reason: node.maintenance_reason,
    last_error: node.last_error,
    reservation: node.reservation,
    console_enabled: false,
    created_at: apiTime(node.created_at),
    updated_at: apiTime(node.updated_at),
    inspection_started_at: null,
    inspection_finished_at: null,
    clean_step: {},
    raid_config: {},
    target_raid_config: {},
    network_interface: node.network_interface,
    resource_class: node.resource_class,
    boot_interface: node.boot_interface,
    console_interface: node.console_interface,
    deploy_interface: node.deploy_interface,
    inspect_interface: node.inspect_interface,
    management_interface: node.management_interface,
    power_interface: node.power_interface,
    vendor_interface: node.vendor_interface,
    rescue_interface: node.rescue_interface,
    fault: null,
    conductor_group: node.conductor_group,
    protected: false,
    protected_reason: null,
    conductor: ctx.conductorOf(node),
  };
}

/** Renders a node with the given fields (all fields of the version when omitted). */
export function renderNode(node: NodeRow, ctx: NodeViewContext, fields?: readonly string[], withResourceLinks = true): Record<string, unknown> {
  const all = allFields(node, ctx);
  const out: Record<string, unknown> = {};
  for (const f of fields ?? fieldsAt(ctx.version)) out[f] = all[f];
  out.links = resourceLinks(ctx.base, 'nodes', node.uuid);
  if (withResourceLinks && fields === undefined) {
    out.ports = resourceLinks(ctx.base, `nodes/${node.uuid}`, 'ports');
    out.states = resourceLinks(ctx.base, `nodes/${node.uuid}`, 'states');
  }
  return out;
}
