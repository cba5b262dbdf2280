/**
 * `GET /v1/drivers[/{name}]`: the hardware types live conductors registered
 * (`conductor_hardware_interfaces`), which of them serve each, and (with `detail`) the enabled and
 * default interfaces they registered — in the Ironic API's shape, and like Ironic: a hardware type
 * no live conductor serves is not listed, whatever this API process could load itself.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { listServedHardwareTypes } from '../../cluster/hardware-interfaces.js';
import type { ServedHardwareType } from '../../cluster/hardware-interfaces.js';
import { listConductors } from '../../cluster/membership.js';
import { NotAcceptable, NotFound } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { INTERFACE_TYPES, interfaceField } from '../../drivers/index.js';
import type { InterfaceType } from '../../drivers/index.js';
import { INTERFACE_FIELDS } from '../../drivers/fields.js';
import type { DriverRegistry } from '../../drivers/index.js';
import { baseUrl, resourceLinks } from '../links.js';
import { compareVersions, formatVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';
import { NODE_FIELDS } from '../../nodes/node-fields.js';
import { parseBool, parseChoice } from '../query.js';
import { RAID_CONFIG_SINCE } from './node-console-raid.js';

/** The driver types a list may be filtered by (Ironic's `type`). */
const DRIVER_TYPES = ['classic', 'dynamic'] as const;
/** The microversion that brought driver types and `detail`. */
const DYNAMIC_DRIVERS_SINCE: Microversion = [1, 30];

/**
 * Whether a driver's detail shows an interface type at `version`: the types whose node field came
 * after the dynamic interfaces (1.31) — storage 1.33, rescue 1.38, bios 1.40 — are hidden from older
 * clients, as Ironic's `hide_fields_in_newer_versions` hides them.
 */
function shownAt(type: InterfaceType, version: Microversion): boolean {
  const since = NODE_FIELDS.since(interfaceField(type));
  return since === undefined || compareVersions(since, [1, 31]) <= 0 || compareVersions(version, since) >= 0;
}

export function driverRoutes(app: FastifyInstance, options: { store: Store; config: Config; drivers: DriverRegistry }): void {
  const { store, config, drivers } = options;

  async function served(): Promise<ServedHardwareType[]> {
    const live = (await listConductors(store, config.conductor.heartbeat_timeout)).filter((c) => c.alive);
    return listServedHardwareTypes(store, live);
  }

  function render(info: ServedHardwareType, request: FastifyRequest, detail: boolean): Record<string, unknown> {
    const base = baseUrl(request, config.api.public_endpoint);
    const out: Record<string, unknown> = { name: info.name, hosts: info.hosts, type: 'dynamic', links: resourceLinks(base, 'drivers', info.name) };
    if (detail) {
      // The description is the catalogue's: conductors register interfaces, not prose.
      out.description = drivers.list().find((d) => d.name === info.name)?.description ?? null;
      for (const type of INTERFACE_TYPES) {
        if (!shownAt(type, request.apiVersion)) continue;
        out[`default_${type}_interface`] = info.interfaces[type]?.default ?? null;
        out[`enabled_${type}_interfaces`] = info.interfaces[type]?.enabled ?? [];
      }
      out.properties = resourceLinks(base, `drivers/${info.name}`, 'properties');
    }
    return out;
  }

  app.get<{ Querystring: { detail?: string; type?: string } }>('/v1/drivers', async (request) => {
    const { query } = request;
    // Driver types and details came with dynamic drivers (1.30); older clients get 406, as from Ironic.
    for (const name of ['type', 'detail'] as const) {
      if (query[name] !== undefined && compareVersions(request.apiVersion, DYNAMIC_DRIVERS_SINCE) < 0) {
        throw new NotAcceptable(`${name}: needs API version ${formatVersion(DYNAMIC_DRIVERS_SINCE)} or later`);
      }
    }
    const detail = parseBool('detail', query.detail) ?? false;
    // Every hardware type is dynamic; classic drivers are gone from Ironic too, so `classic` lists none.
    const type = parseChoice('type', query.type, DRIVER_TYPES, 'dynamic');
    if (type === 'classic') return { drivers: [] };
    return { drivers: (await served()).map((info) => render(info, request, detail)) };
  });

  // Ironic's: the driver_info keys the hardware type's default interfaces read, each described and
  // marked Required or Optional (docs/driver-fields.md has the same, per implementation).
  app.get<{ Params: { name: string } }>('/v1/drivers/:name/properties', async (request) => {
    const info = (await served()).find((d) => d.name === request.params.name);
    if (!info) throw new NotFound(`driver ${request.params.name} could not be found`);
    const properties: Record<string, string> = {};
    for (const type of INTERFACE_TYPES) {
      const implementation = info.interfaces[type]?.default;
      const fields = implementation ? INTERFACE_FIELDS[`${type}/${implementation}`] : undefined;
      for (const field of fields ?? []) {
        if (field.bag !== 'driver_info') continue;
        properties[field.key] = `${field.description.replaceAll('`', '')} ${field.requiredFor ? `Required (${field.requiredFor}).` : 'Optional.'}`;
      }
    }
    return properties;
  });

  // Ironic's (1.12): what a logical disk of a target RAID configuration may say, from the driver's
  // default RAID interface. `no-raid` describes them too, as Ironic's NoRAID does; a hardware type
  // whose conductors registered no RAID interface at all has none to ask (404, as Ironic's).
  app.get<{ Params: { name: string } }>('/v1/drivers/:name/raid/logical_disk_properties', async (request) => {
    if (compareVersions(request.apiVersion, RAID_CONFIG_SINCE) < 0) throw new NotAcceptable(`RAID configuration needs API version ${formatVersion(RAID_CONFIG_SINCE)} or later`);
    const info = (await served()).find((d) => d.name === request.params.name);
    if (!info) throw new NotFound(`driver ${request.params.name} could not be found`);
    const raid = info.interfaces.raid?.default;
    if (!raid) throw new NotFound(`Driver ${info.name} does not support raid (disabled or not implemented)`);
    return drivers.interfacesFor({ driver: info.name, raid_interface: raid }).raid.logicalDiskProperties();
  });

  app.get<{ Params: { name: string } }>('/v1/drivers/:name', async (request) => {
    const info = (await served()).find((d) => d.name === request.params.name);
    if (!info) throw new NotFound(`driver ${request.params.name} could not be found`);
    return render(info, request, true);
  });
}
