/**
 * Auto-discovery (Ironic's `[auto_discovery]`): an inventory posted to `/v1/continue_inspection`
 * by a machine whose MACs no node has — it network-booted the discovery ramdisk — enrolls it as a
 * new node. The API does it itself: the node has no owner's work to do yet (no BMC credentials,
 * nothing to boot), only records to write. What the inventory says goes through the same hooks and
 * inspection rules as an inspection's (`conductor/inspection.ts`): properties, ports per
 * `[inspector] add_ports`, the inventory stored; the node is `enroll`, `extra.auto_discovered` true,
 * an ipmi node's `driver_info.ipmi_address` the BMC address the agent read, if it read one, and its
 * `deploy_kernel`/`deploy_ramdisk` (with checksums) those of `[auto_discovery]`, the ramdisk it booted.
 */
import { hostname } from 'node:os';
import { writeHistory } from '../cluster/reservations.js';
import { Conflict, InvalidParameter } from '../common/errors.js';
import type { Config } from '../config/options.js';
import type { InspectionData } from '../agent/inspection-data.js';
import type { Store } from '../db/connect.js';
import type { DriverRegistry } from '../drivers/index.js';
import { applyInspectionRules, applyRuledTraits, InspectionFailed, inspectionSummary, inspectorSettings, processInventory, storedPluginData } from '../conductor/inspection.js';
import { saveInventory } from '../nodes/inventory-store.js';
import { createNode } from '../nodes/node-store.js';
import type { NodeRow } from '../nodes/node-store.js';
import { createPort } from '../nodes/port-store.js';

/**
 * Enrolls the machine that posted `data`; `InvalidParameter` (400) when its inventory cannot be
 * used (no usable NIC, a rule's `fail`), `Conflict` when one of its MACs was enrolled meanwhile
 * (the same machine posting twice at once: the first one wins).
 */
export async function enrollDiscovered(store: Store, config: Config, drivers: DriverRegistry, data: InspectionData): Promise<NodeRow> {
  const driver = config.auto_discovery.driver;
  const settings = inspectorSettings(config);
  const findings = (() => {
    try {
      return processInventory({ properties: {} }, data.inventory, { ...settings, addPorts: settings.addPorts === 'disabled' ? 'pxe' : settings.addPorts });
    } catch (err) {
      if (err instanceof InspectionFailed) throw new InvalidParameter(`inventory: ${err.message}`);
      throw err;
    }
  })();
  const bmc = typeof data.inventory.bmc_address === 'string' && data.inventory.bmc_address !== '' && data.inventory.bmc_address !== '0.0.0.0' ? data.inventory.bmc_address : null;
  const driverInfo: Record<string, unknown> = driver === 'ipmi' && bmc !== null ? { ipmi_address: bmc } : {};
  // The ramdisk it booted is the one to boot it with from now on (deploy, clean, inspect).
  const d = config.auto_discovery;
  for (const key of ['deploy_kernel', 'deploy_kernel_checksum', 'deploy_ramdisk', 'deploy_ramdisk_checksum'] as const) if (d[key] !== '') driverInfo[key] = d[key];
  const extra: Record<string, unknown> = { auto_discovered: true };
  const history: string[] = [];
  const probe = { uuid: '', name: null, driver, resource_class: null, extra, driver_info: driverInfo } as const;
  let ruled;
  try {
    ruled = await applyInspectionRules(store, probe, findings, data, async (line) => void history.push(line));
  } catch (err) {
    if (err instanceof InspectionFailed) throw new InvalidParameter(`inventory: ${err.message}`);
    throw err;
  }
  // The agent inspection where the hardware type has it, so `inspect` works once the BMC is set.
  const interfaces = drivers.validateInterfaces(driver, drivers.get(driver).interfaces.inspect.enabled.includes('agent') ? { inspect_interface: 'agent' } : {});
  const changes = ruled.changes;
  const node = await createNode(store, {
    driver,
    ...interfaces,
    provision_state: 'enroll',
    properties: JSON.stringify(findings.properties),
    extra: JSON.stringify(changes.extra ?? extra),
    driver_info: JSON.stringify(changes.driver_info ?? driverInfo),
    ...(changes.resource_class !== undefined ? { resource_class: changes.resource_class } : {}),
  });
  const notes: string[] = [];
  try {
    for (const iface of Object.values(findings.validInterfaces)) {
      const link = settings.updateLocalLinkConnection && Object.hasOwn(findings.localLinks, iface.mac_address) ? findings.localLinks[iface.mac_address] : undefined;
      await createPort(store, { address: iface.mac_address, nodeId: node.id, pxeEnabled: iface.pxe_enabled, ...(link ? { localLinkConnection: link } : {}) });
      notes.push(`port ${iface.mac_address} added${iface.pxe_enabled ? ' (PXE)' : ''}`);
    }
  } catch (err) {
    // A MAC of this machine was enrolled meanwhile: that node stands, this one goes.
    await store.db.deleteFrom('nodes').where('id', '=', node.id).execute();
    if (err instanceof Conflict) throw new Conflict(`the machine was enrolled meanwhile: ${err.message}`);
    throw err;
  }
  await saveInventory(store, node.id, { inventory: data.inventory, plugin_data: storedPluginData(ruled.pluginData, findings) });
  // A rule adding more than 50 traits leaves the node enrolled without them, and says so.
  await applyRuledTraits(store, node.id, ruled.traits).catch((err: Error) => void history.push(`traits not set: ${err.message}`));
  await writeHistory(store, [
    { nodeId: node.id, conductor: hostname(), eventType: 'inspection', severity: 'INFO', event: `discovered and enrolled (driver ${driver})` },
    ...history.map((event) => ({ nodeId: node.id, conductor: hostname(), eventType: 'inspection', severity: 'INFO' as const, event })),
    { nodeId: node.id, conductor: hostname(), eventType: 'inspection', severity: 'INFO', event: inspectionSummary(findings, notes) },
  ]);
  return node;
}
