/**
 * In-band inspection as the node's owner finishes it (Ironic's `agent` inspect interface and its
 * inspection hooks): the node's agent posted its hardware inventory (`POST /v1/continue_inspection`),
 * and here the owner, holding the node's lock in `inspect wait`, turns it into the node's
 * properties and ports, stores it, and ends the inspection.
 *
 * What the inventory sets, as Ironic's hooks of the same names do:
 * - `validate-interfaces`: every Ethernet interface with a valid MAC; the one the node
 *   network-booted from (`boot.pxe_interface`) is `pxe_enabled`. `[inspector] add_ports` picks which
 *   get ports (`pxe`, falling back to every NIC with an address when the agent could not tell;
 *   `active`; `all`; `disabled`); `keep_ports` which existing ports stay (`all`, `present`, `added`);
 *   `update_pxe_enabled` sets the kept ports' flag. A MAC already on another node is left there.
 * - `cpus`, `architecture`, `memory`: `cpus`, `cpu_arch`, `memory_mb` (physical, else total).
 * - `root-device`: the root disk — the first matching `properties.root_device` (disks matching
 *   `skip_block_devices` left out; no match fails the inspection), else the smallest disk of at
 *   least 4 GiB as the agent would choose — gives `local_gb` (its size in GiB, less 1 with
 *   `[inspector] disk_partitioning_spacing`; 0 when there is none).
 * - `boot-mode`: `capabilities` gets `boot_mode:uefi|bios`, other capabilities kept.
 * - `parse-lldp`: what each NIC's LLDP says of its switch port, in `plugin_data.parsed_lldp`
 *   (src/nodes/lldp.ts); `local-link-connection`: with `[inspector] update_local_link_connection`,
 *   ports get `switch_id`, `port_id`, `switch_info` from it — keys already set are kept.
 * Ironic runs only some of these by default; ironring runs all of them.
 */
import { chooseRootDevice, parseHints } from '../agent/disk/root-device-hints.js';
import type { BlockDevice } from '../agent/disk/block-devices.js';
import type { InspectionData } from '../agent/inspection-data.js';
import type { NodePatch, NodeTask } from '../cluster/task.js';
import { InvalidParameter } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import type { DriverTask } from '../drivers/index.js';
import type { Config } from '../config/options.js';
import type { NodeRow } from '../nodes/node-store.js';
import { localLinkFromLldp, parseLldp } from '../nodes/lldp.js';
import type { ParsedLldp } from '../nodes/lldp.js';
import { RuleFailed, runInspectionRules } from '../nodes/inspection-rules.js';
import { saveInventory } from '../nodes/inventory-store.js';
import { addTraits, dropTraits } from '../nodes/traits.js';
import { createPort, deletePort, updatePort } from '../nodes/port-store.js';

/** `[inspector]`, as the owner applies it. */
export interface InspectorSettings {
  addPorts: 'all' | 'active' | 'pxe' | 'disabled';
  keepPorts: 'all' | 'present' | 'added';
  updatePxeEnabled: boolean;
  diskPartitioningSpacing: boolean;
  updateLocalLinkConnection: boolean;
}

export const DEFAULT_INSPECTOR_SETTINGS: InspectorSettings = { addPorts: 'pxe', keepPorts: 'all', updatePxeEnabled: true, diskPartitioningSpacing: true, updateLocalLinkConnection: true };

/** `[inspector]` as the settings of the hooks. */
export function inspectorSettings(config: Config): InspectorSettings {
  const i = config.inspector;
  return {
    addPorts: i.add_ports,
    keepPorts: i.keep_ports,
    updatePxeEnabled: i.update_pxe_enabled,
    diskPartitioningSpacing: i.disk_partitioning_spacing,
    updateLocalLinkConnection: i.update_local_link_connection,
  };
}

/** The inventory cannot be used for this node: the inspection fails with this message. */
export class InspectionFailed extends Error {}

/** One NIC of the inventory, as the hooks see it. */
export interface InspectedInterface {
  name: string;
  mac_address: string;
  ipv4_address: string | null;
  ipv6_address: string | null;
  pxe_enabled: boolean;
}

/** What an inventory means for a node (`processInventory`). */
export interface InspectionFindings {
  /** The node's properties with what inspection found merged in. */
  properties: Record<string, unknown>;
  /** Every usable interface, by name. */
  allInterfaces: Record<string, InspectedInterface>;
  /** Those `add_ports` picks. */
  validInterfaces: Record<string, InspectedInterface>;
  rootDisk: BlockDevice | null;
  localGb: number;
  /** What each interface's LLDP says (`plugin_data.parsed_lldp`), by interface name. */
  parsedLldp: Record<string, ParsedLldp>;
  /** `local_link_connection` keys the LLDP gives, by MAC. */
  localLinks: Record<string, Record<string, string>>;
}

const GIB = 2 ** 30;
const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** The MAC the node booted from (`boot.pxe_interface`), pxelinux's `01-aa-bb-…` form accepted. */
export function pxeMac(inventory: Record<string, unknown>): string | null {
  const raw = isObject(inventory.boot) ? text(inventory.boot.pxe_interface) : null;
  if (raw === null) return null;
  const mac = (/^01-([0-9a-f]{2}-){5}[0-9a-f]{2}$/i.test(raw) ? raw.slice(3).replaceAll('-', ':') : raw).toLowerCase();
  return MAC.test(mac) ? mac : null;
}

function interfacesOf(inventory: Record<string, unknown>): Record<string, InspectedInterface> {
  const boot = pxeMac(inventory);
  const all: Record<string, InspectedInterface> = Object.create(null) as Record<string, InspectedInterface>;
  for (const raw of Array.isArray(inventory.interfaces) ? inventory.interfaces : []) {
    if (!isObject(raw)) continue;
    const name = text(raw.name);
    const mac = text(raw.mac_address)?.toLowerCase() ?? null;
    if (name === null || mac === null || !MAC.test(mac) || mac === '00:00:00:00:00:00') continue;
    const v6 = text(raw.ipv6_address);
    all[name] = { name, mac_address: mac, ipv4_address: text(raw.ipv4_address), ipv6_address: v6 === null ? null : v6.split('%')[0]!, pxe_enabled: mac === boot };
  }
  return all;
}

function pickInterfaces(all: Record<string, InspectedInterface>, addPorts: InspectorSettings['addPorts'], booted: boolean): Record<string, InspectedInterface> {
  const picked: Record<string, InspectedInterface> = Object.create(null) as Record<string, InspectedInterface>;
  for (const [name, iface] of Object.entries(all)) {
    const ip = iface.ipv4_address ?? iface.ipv6_address;
    if (name === 'lo' || (ip !== null && (ip.startsWith('127.') || ip === '::1'))) continue;
    if (addPorts === 'pxe' && booted && !iface.pxe_enabled) continue;
    if ((addPorts === 'active' || (addPorts === 'pxe' && !booted)) && ip === null) continue;
    picked[name] = iface;
  }
  return picked;
}

/** `capabilities` (`a:b,c:d`) with `key` set to `value`. */
export function withCapability(capabilities: unknown, key: string, value: string): string {
  const parts = typeof capabilities === 'string' && capabilities !== '' ? capabilities.split(',').filter((p) => p.split(':')[0] !== key) : [];
  return [...parts, `${key}:${value}`].join(',');
}

/** What the inventory means for the node; `InspectionFailed` when it cannot be used. */
export function processInventory(node: { properties: Readonly<Record<string, unknown>> }, inventory: Record<string, unknown>, settings: InspectorSettings): InspectionFindings {
  const allInterfaces = interfacesOf(inventory);
  if (Object.keys(allInterfaces).length === 0) throw new InspectionFailed('the inventory lists no network interface with a valid MAC address');
  const validInterfaces = pickInterfaces(allInterfaces, settings.addPorts, pxeMac(inventory) !== null);
  if (settings.addPorts !== 'disabled' && Object.keys(validInterfaces).length === 0) {
    throw new InspectionFailed(`no network interface of the inventory matches [inspector] add_ports = ${settings.addPorts}`);
  }
  const properties: Record<string, unknown> = { ...node.properties };
  const cpu = isObject(inventory.cpu) ? inventory.cpu : {};
  if (typeof cpu.count === 'number' && Number.isInteger(cpu.count) && cpu.count > 0) properties.cpus = cpu.count;
  if (text(cpu.architecture) !== null) properties.cpu_arch = cpu.architecture;
  const memory = isObject(inventory.memory) ? inventory.memory : {};
  const memoryMb = typeof memory.physical_mb === 'number' && memory.physical_mb > 0 ? memory.physical_mb : typeof memory.total === 'number' && memory.total > 0 ? Math.floor(memory.total / 2 ** 20) : null;
  if (memoryMb !== null) properties.memory_mb = Math.round(memoryMb);
  const rootDisk = chooseRoot(node.properties, Array.isArray(inventory.disks) ? inventory.disks.filter(isObject).map(asDisk) : []);
  let localGb = rootDisk === null ? 0 : Math.floor(rootDisk.size / GIB);
  if (localGb > 0 && settings.diskPartitioningSpacing) localGb -= 1;
  properties.local_gb = localGb;
  const mode = isObject(inventory.boot) ? text(inventory.boot.current_boot_mode) : null;
  if (mode === 'uefi' || mode === 'bios') properties.capabilities = withCapability(properties.capabilities, 'boot_mode', mode);
  const parsedLldp: Record<string, ParsedLldp> = Object.create(null) as Record<string, ParsedLldp>;
  const localLinks: Record<string, Record<string, string>> = Object.create(null) as Record<string, Record<string, string>>;
  for (const raw of Array.isArray(inventory.interfaces) ? inventory.interfaces : []) {
    const name = isObject(raw) ? text(raw.name) : null;
    if (name === null || !Object.hasOwn(allInterfaces, name)) continue;
    const parsed = parseLldp(raw.lldp);
    if (parsed !== null) parsedLldp[name] = parsed;
    const link = localLinkFromLldp(raw.lldp);
    if (Object.keys(link).length > 0) localLinks[allInterfaces[name]!.mac_address] = link;
  }
  return { properties, allInterfaces, validInterfaces, rootDisk, localGb, parsedLldp, localLinks };
}

/** `existing` with the keys of `found` it lacks; null when it lacks none. */
export function withLocalLink(existing: Readonly<Record<string, unknown>>, found: Readonly<Record<string, string>> | undefined): Record<string, unknown> | null {
  const missing = Object.entries(found ?? {}).filter(([key]) => existing[key] === undefined || existing[key] === '');
  return missing.length > 0 ? { ...existing, ...Object.fromEntries(missing) } : null;
}

function asDisk(raw: Record<string, unknown>): BlockDevice {
  const s = (v: unknown) => (typeof v === 'string' ? v : null);
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return {
    name: s(raw.name) ?? '',
    size: n(raw.size) ?? 0,
    model: s(raw.model), vendor: s(raw.vendor), serial: s(raw.serial),
    wwn: s(raw.wwn), wwn_with_extension: s(raw.wwn_with_extension), wwn_vendor_extension: s(raw.wwn_vendor_extension),
    rotational: raw.rotational === true, hctl: s(raw.hctl), by_path: s(raw.by_path),
    logical_sectors: n(raw.logical_sectors), physical_sectors: n(raw.physical_sectors), removable: raw.removable === true,
  };
}

/**
 * The root disk: with `root_device` hints, the first disk matching them (none → the inspection
 * fails, as Ironic's hook); without, the agent's default choice, or none (a diskless node or
 * disks under 4 GiB: local_gb 0). Disks matching `skip_block_devices` are never chosen.
 */
function chooseRoot(properties: Readonly<Record<string, unknown>>, disks: BlockDevice[]): BlockDevice | null {
  const skip = Array.isArray(properties.skip_block_devices) ? properties.skip_block_devices : [];
  const eligible = disks.filter((d) => d.name !== '' && !skip.some((hint) => {
    try {
      const hints = parseHints(hint);
      return hints.length > 0 && chooseRootDevice([d], hint) === d;
    } catch {
      return false;
    }
  }));
  const hinted = parseHints(properties.root_device ?? null).length > 0;
  try {
    return chooseRootDevice(eligible, properties.root_device ?? null);
  } catch (err) {
    if (hinted) throw new InspectionFailed(`no disk satisfies the root device hints ${JSON.stringify(properties.root_device)}: ${(err as Error).message}`);
    return null;
  }
}

/** The port changes inspection makes (`add_ports`, `keep_ports`, `update_pxe_enabled`). */
export interface PortPlan {
  create: Array<{ address: string; pxeEnabled: boolean; localLinkConnection?: Record<string, string> }>;
  remove: Array<{ uuid: string; address: string }>;
  setPxe: Array<{ uuid: string; pxeEnabled: boolean }>;
  /** Kept ports whose `local_link_connection` LLDP completes: the whole new value. */
  setLink: Array<{ uuid: string; address: string; localLinkConnection: Record<string, unknown> }>;
}

export interface ExistingPort {
  uuid: string;
  address: string;
  pxe_enabled: boolean;
  local_link_connection?: Readonly<Record<string, unknown>>;
}

export function planPorts(existing: readonly ExistingPort[], findings: InspectionFindings, settings: InspectorSettings): PortPlan {
  const all = Object.values(findings.allInterfaces);
  const valid = Object.values(findings.validInterfaces);
  const have = new Set(existing.map((p) => p.address));
  const links = settings.updateLocalLinkConnection ? findings.localLinks : {};
  const create = settings.addPorts === 'disabled'
    ? []
    : valid.filter((i) => !have.has(i.mac_address)).map((i) => ({ address: i.mac_address, pxeEnabled: i.pxe_enabled, ...(Object.hasOwn(links, i.mac_address) ? { localLinkConnection: links[i.mac_address]! } : {}) }));
  const expected = settings.keepPorts === 'present' ? new Set(all.map((i) => i.mac_address)) : settings.keepPorts === 'added' ? new Set(valid.map((i) => i.mac_address)) : null;
  const pxe = new Set(all.filter((i) => i.pxe_enabled).map((i) => i.mac_address));
  const remove: PortPlan['remove'] = [];
  const setPxe: PortPlan['setPxe'] = [];
  const setLink: PortPlan['setLink'] = [];
  for (const port of existing) {
    if (expected !== null && !expected.has(port.address)) {
      remove.push({ uuid: port.uuid, address: port.address });
      continue;
    }
    if (settings.updatePxeEnabled && pxe.size > 0 && pxe.has(port.address) !== port.pxe_enabled) setPxe.push({ uuid: port.uuid, pxeEnabled: pxe.has(port.address) });
    const link = withLocalLink(port.local_link_connection ?? {}, Object.hasOwn(links, port.address) ? links[port.address] : undefined);
    if (link !== null) setLink.push({ uuid: port.uuid, address: port.address, localLinkConnection: link });
  }
  return { create, remove, setPxe, setLink };
}

/** What the owner needs to finish an inspection. */
export interface FinishInspectionDeps {
  store: Store;
  settings: InspectorSettings;
  /** The power state to write (the BMC read back). */
  readPower: (driverTask: DriverTask) => Promise<NodePatch>;
}

/** How an inspection ended: the node's new fields, and whether its agent stays up (fast track). */
export interface InspectionResult {
  changes: NodePatch;
  keepAgent: boolean;
}

/**
 * Finishes the inspection of `task`'s node (in `inspect wait`, locked) with the agent's report:
 * the findings, then the inspect interface ends the inspection (the ramdisk's boot files go, the
 * node powers off unless fast track keeps its agent), then ports change, the inventory is stored
 * and the properties are returned to be written with `manageable`. `InspectionFailed` (or any
 * error) → the caller fails the inspection; the node is powered off first.
 */
export async function finishInspection(task: NodeTask, driverTask: DriverTask, data: InspectionData, deps: FinishInspectionDeps): Promise<InspectionResult> {
  const inspect = driverTask.driver.inspect;
  let tornDown = false;
  try {
    const findings = processInventory(task.node, data.inventory, deps.settings);
    const ruled = await applyInspectionRules(deps.store, task.node, findings, data, (event) => task.recordHistory({ eventType: 'inspection', severity: 'INFO', event }));
    tornDown = true;
    const { keepAgent } = (await inspect.tearDownInspection?.(driverTask, false)) ?? { keepAgent: false };
    const notes = await applyPorts(task, findings, deps);
    await applyRuledTraits(deps.store, task.node.id, ruled.traits);
    await saveInventory(deps.store, task.node.id, { inventory: data.inventory, plugin_data: storedPluginData(ruled.pluginData, findings) });
    await task.recordHistory({ eventType: 'inspection', severity: 'INFO', event: inspectionSummary(findings, notes) });
    return { changes: { properties: findings.properties, ...ruled.changes, ...(keepAgent ? {} : await deps.readPower(driverTask)) }, keepAgent };
  } catch (err) {
    // A failed inspection leaves no ramdisk up: power off, files gone (once).
    if (!tornDown) await inspect.tearDownInspection?.(driverTask, true).catch(() => undefined);
    throw err;
  }
}

/** What the inspection rules decided: node fields, the plugin data as they left it, traits to add and remove. */
export interface RuledInspection {
  changes: NodePatch;
  pluginData: Record<string, unknown>;
  traits: { add: string[]; remove: string[] };
}

/** Writes the rules' trait changes to node `nodeId` (at most 50 traits on a node: past that, the inspection fails). */
export async function applyRuledTraits(store: Store, nodeId: number, traits: RuledInspection['traits']): Promise<void> {
  await dropTraits(store, nodeId, traits.remove);
  try {
    await addTraits(store, nodeId, traits.add);
  } catch (err) {
    if (err instanceof InvalidParameter) throw new InspectionFailed(`inspection rules: ${err.message}`);
    throw err;
  }
}

/** The node fields inspection rules read, as the rules see them (`node.…` references). */
export type RuleNode = Pick<NodeRow, 'uuid' | 'name' | 'driver' | 'resource_class' | 'extra' | 'driver_info'>;

/**
 * Runs the operator's inspection rules (`nodes/inspection-rules.ts`) on the findings: the node as
 * the hooks left it, the inventory and the plugin data. Their changes to `properties` replace the
 * findings' (they saw them); a rule's `fail` fails the inspection with its message (`InspectionFailed`).
 * `record` gets a line for the node's history per `log` action and one naming the rules applied.
 */
export async function applyInspectionRules(store: Store, node: RuleNode, findings: InspectionFindings, data: InspectionData, record: (line: string) => Promise<void>): Promise<RuledInspection> {
  const rows = await store.db.selectFrom('inspection_rules').select(['uuid', 'description', 'priority', 'phase', 'sensitive', 'conditions', 'actions']).execute();
  const pluginData = structuredClone(data.pluginData);
  if (rows.length === 0) return { changes: {}, pluginData, traits: { add: [], remove: [] } };
  const view = { uuid: node.uuid, name: node.name, driver: node.driver, resource_class: node.resource_class, properties: findings.properties, extra: node.extra, driver_info: node.driver_info };
  let outcome;
  try {
    outcome = runInspectionRules(rows, { inventory: data.inventory, plugin_data: pluginData, node: view });
  } catch (err) {
    if (err instanceof RuleFailed) throw new InspectionFailed(err.message);
    throw new InspectionFailed(`an inspection rule could not run: ${(err as Error).message}`);
  }
  const { properties, extra, driver_info: driverInfo, resource_class: resourceClass } = outcome.changes;
  if (properties !== undefined) findings.properties = properties;
  for (const line of outcome.log) await record(`rule: ${line}`);
  if (outcome.applied.length > 0) await record(`inspection rules applied: ${outcome.applied.join(', ')}`);
  return {
    changes: { ...(extra !== undefined ? { extra } : {}), ...(driverInfo !== undefined ? { driver_info: driverInfo } : {}), ...(resourceClass !== undefined ? { resource_class: resourceClass as string | null } : {}) },
    pluginData,
    traits: outcome.traits,
  };
}

/** The plugin data stored with an inventory: the agent's, and what the hooks derived. */
export function storedPluginData(pluginData: Record<string, unknown>, findings: InspectionFindings): Record<string, unknown> {
  return {
    ...pluginData,
    all_interfaces: findings.allInterfaces,
    valid_interfaces: findings.validInterfaces,
    macs: Object.values(findings.validInterfaces).map((i) => i.mac_address),
    root_disk: findings.rootDisk,
    local_gb: findings.localGb,
    parsed_lldp: findings.parsedLldp,
  };
}

/** One line for the history: what the inspection found. */
export function inspectionSummary(findings: InspectionFindings, notes: readonly string[]): string {
  const p = findings.properties;
  return `inspected: ${String(p.cpus ?? '?')} CPUs (${String(p.cpu_arch ?? '?')}), ${String(p.memory_mb ?? '?')} MiB, local_gb ${findings.localGb}${findings.rootDisk ? ` (${findings.rootDisk.name})` : ''}${notes.length > 0 ? `; ${notes.join(', ')}` : ''}`;
}

/** Applies `planPorts`; returns one note per change for the history. */
async function applyPorts(task: NodeTask, findings: InspectionFindings, deps: FinishInspectionDeps): Promise<string[]> {
  const existing = await deps.store.db.selectFrom('ports').select(['uuid', 'address', 'pxe_enabled', 'local_link_connection']).where('node_id', '=', task.node.id).orderBy('id').execute();
  const plan = planPorts(existing, findings, deps.settings);
  const notes: string[] = [];
  for (const port of plan.remove) {
    await deletePort(deps.store, port.uuid);
    notes.push(`port ${port.address} removed`);
  }
  for (const port of plan.setPxe) {
    await updatePort(deps.store, port.uuid, { pxeEnabled: port.pxeEnabled });
    notes.push(`port ${port.uuid} pxe_enabled ${port.pxeEnabled}`);
  }
  for (const port of plan.setLink) {
    await updatePort(deps.store, port.uuid, { localLinkConnection: port.localLinkConnection });
    notes.push(`port ${port.address} local_link_connection from LLDP`);
  }
  for (const port of plan.create) {
    try {
      await createPort(deps.store, { address: port.address, nodeId: task.node.id, pxeEnabled: port.pxeEnabled, ...(port.localLinkConnection ? { localLinkConnection: port.localLinkConnection } : {}) });
      notes.push(`port ${port.address} added${port.pxeEnabled ? ' (PXE)' : ''}`);
    } catch (err) {
      // A MAC on another node stays there, as Ironic leaves it.
      notes.push(`port ${port.address} not added: ${(err as Error).message}`);
    }
  }
  return notes;
}
