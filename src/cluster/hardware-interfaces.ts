/**
 * `conductor_hardware_interfaces`: which hardware types, and which implementations of each of their
 * interfaces, every conductor can run. A conductor writes its rows when it registers; the API's
 * driver list reads them, as Ironic's does: a hardware type is listed while a live conductor has
 * registered it, with those conductors as its hosts and their interfaces as its enabled ones.
 */
import type { Store } from '../db/connect.js';

/** A hardware interface a conductor can run, as registered in `conductor_hardware_interfaces`. */
export interface HardwareInterfaceRegistration {
  hardwareType: string;
  interfaceType: string;
  interfaceName: string;
  default: boolean;
}

/** Replaces a conductor's rows with `interfaces`, in one transaction (a reader sees old or new). */
export async function replaceInterfaces(store: Store, conductorId: number, interfaces: readonly HardwareInterfaceRegistration[]): Promise<void> {
  await store.db.transaction().execute(async (tx) => {
    await tx.deleteFrom('conductor_hardware_interfaces').where('conductor_id', '=', conductorId).execute();
    if (interfaces.length === 0) return;
    await tx
      .insertInto('conductor_hardware_interfaces')
      .values(
        interfaces.map((i) => ({
          conductor_id: conductorId,
          hardware_type: i.hardwareType,
          interface_type: i.interfaceType,
          interface_name: i.interfaceName,
          default: i.default,
        })),
      )
      .execute();
  });
}

/** One interface type of a served hardware type. */
export interface ServedInterface {
  /** Implementations some live conductor enabled, the default first. */
  enabled: string[];
  default: string | null;
}

/** A hardware type that live conductors serve. */
export interface ServedHardwareType {
  name: string;
  /** Hostnames of the live conductors that registered it, sorted. */
  hosts: string[];
  /** Per interface type (`power`, `boot`…). */
  interfaces: Record<string, ServedInterface>;
}

/**
 * The hardware types the `live` conductors (`listConductors(…)` filtered on `alive`) registered,
 * sorted by name. Where conductors disagree, enabled implementations are the union and the default
 * is that of the first conductor by hostname that names one.
 */
export async function listServedHardwareTypes(store: Store, live: ReadonlyArray<{ id: number; hostname: string }>): Promise<ServedHardwareType[]> {
  if (live.length === 0) return [];
  const conductors = [...live].sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0));
  const hostOf = new Map(conductors.map((c) => [c.id, c.hostname]));
  const rows = await store.db
    .selectFrom('conductor_hardware_interfaces')
    .select(['conductor_id', 'hardware_type', 'interface_type', 'interface_name', 'default'])
    .where('conductor_id', 'in', [...hostOf.keys()])
    .orderBy('id')
    .execute();
  // Conductors in hostname order, each one's rows in registration order.
  const order = new Map(conductors.map((c, i) => [c.id, i]));
  rows.sort((a, b) => order.get(a.conductor_id)! - order.get(b.conductor_id)!);
  const types = new Map<string, ServedHardwareType>();
  for (const r of rows) {
    let type = types.get(r.hardware_type);
    if (!type) types.set(r.hardware_type, (type = { name: r.hardware_type, hosts: [], interfaces: {} }));
    const host = hostOf.get(r.conductor_id)!;
    if (!type.hosts.includes(host)) type.hosts.push(host);
    const iface = (type.interfaces[r.interface_type] ??= { enabled: [], default: null });
    if (r.default && iface.default === null) {
      iface.default = r.interface_name;
      iface.enabled = [r.interface_name, ...iface.enabled.filter((n) => n !== r.interface_name)];
    } else if (!iface.enabled.includes(r.interface_name)) {
      iface.enabled.push(r.interface_name);
    }
  }
  for (const type of types.values()) type.hosts.sort();
  return [...types.values()].sort((a, b) => a.name.localeCompare(b.name));
}
