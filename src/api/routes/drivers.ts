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
import { InvalidParameter, NotAcceptable, NotFound } from '../../common/errors.js';
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
/** The microversion from which every driver view links its properties (Ironic's 1.14). */
const PROPERTIES_LINKS_SINCE: Microversion = [1, 14];
/** The microversion of `fields` on a driver list and a driver (Ironic 1.77); 406 below it. */
export const DRIVER_FIELDS_SINCE: Microversion = [1, 77];

/**
 * `?fields=` of the driver routes (Ironic 1.77): the names, comma-separated, to keep of each
 * driver's view (`links` is always kept, as Ironic's). Undefined when absent; 406 below 1.77.
 */
function driverFields(raw: string | undefined, version: Microversion): string[] | undefined {
  if (raw === undefined) return undefined;
  if (compareVersions(version, DRIVER_FIELDS_SINCE) < 0) throw new NotAcceptable(`fields: selecting driver fields needs API version ${formatVersion(DRIVER_FIELDS_SINCE)} or later`);
  return [...new Set(raw.split(',').map((f) => f.trim()).filter(Boolean))];
}

/**
 * A driver's view cut down to `fields` and its links, as Ironic's `driver_sanitize`: a field the
 * view does not have (in a list without `detail`: only `name`, `hosts`, `type`, `properties`) is
 * a 400 naming it.
 */
function selectFields(view: Record<string, unknown>, fields: readonly string[] | undefined): Record<string, unknown> {
  if (fields === undefined) return view;
  const unknown = fields.filter((f) => !Object.hasOwn(view, f));
  if (unknown.length > 0) throw new InvalidParameter(`fields: ${unknown.map((f) => JSON.stringify(f)).join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not a field of this driver view; valid: ${Object.keys(view).join(', ')}`);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(view)) if (key === 'links' || fields.includes(key)) out[key] = view[key];
  return out;
}

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
    }
    // Links to the driver's properties, in lists too, from 1.14 as Ironic's (so `fields` may ask for them).
    if (compareVersions(request.apiVersion, PROPERTIES_LINKS_SINCE) >= 0) out.properties = resourceLinks(base, `drivers/${info.name}`, 'properties');
    return out;
  }

  app.get<{ Querystring: { detail?: string; type?: string; fields?: string } }>('/v1/drivers', async (request) => {
    const { query } = request;
    const fields = driverFields(query.fields, request.apiVersion);
    // Driver types and details came with dynamic drivers (1.30); older clients get 406, as from Ironic.
    for (const name of ['type', 'detail'] as const) {
      if (query[name] !== undefined && compareVersions(request.apiVersion, DYNAMIC_DRIVERS_SINCE) < 0) {
        throw new NotAcceptable(`${name}: needs API version ${formatVersion(DYNAMIC_DRIVERS_SINCE)} or later`);
      }
    }
    const detail = parseBool('detail', query.detail) ?? false;
    if (fields !== undefined && detail) throw new InvalidParameter('fields and detail cannot be used together');
    // Every hardware type is dynamic; classic drivers are gone from Ironic too, so `classic` lists none.
    const type = parseChoice('type', query.type, DRIVER_TYPES, 'dynamic');
    if (type === 'classic') return { drivers: [] };
    return { drivers: (await served()).map((info) => selectFields(render(info, request, detail), fields)) };
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
    // The default vendor interface's own properties (fake-hardware's `fake` declares B1 and B2, as Ironic's).
    const vendor = info.interfaces.vendor?.default;
    if (vendor) Object.assign(properties, drivers.vendorInterface(vendor)?.properties() ?? {});
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

  app.get<{ Params: { name: string }; Querystring: { fields?: string } }>('/v1/drivers/:name', async (request) => {
    const fields = driverFields(request.query.fields, request.apiVersion);
    const info = (await served()).find((d) => d.name === request.params.name);
    if (!info) throw new NotFound(`driver ${request.params.name} could not be found`);
    return selectFields(render(info, request, true), fields);
  });
}
