/**
 * The RPC actions of a node's VIFs, management extras (NMI, indicators) and vendor passthru, merged
 * into the conductor's endpoint (`rpc.ts`). Each checks its input again — the endpoint is reachable
 * by anything holding the RPC credentials — and runs the module that owns the action.
 */
import { InvalidParameter } from '../common/errors.js';
import { isIndicatorState } from '../drivers/index.js';
import { injectNmi, getIndicatorState, setIndicatorState, supportedIndicators } from './node-management.js';
import type { NodeOperations } from './node-operations.js';
import { vendorMethods, vendorPassthru } from './vendor-passthru.js';
import { attachVif, detachVif, listVifs } from './vifs.js';
import type { VifInfo } from './vifs.js';

type Handler = (ops: NodeOperations, uuid: string, body: unknown) => Promise<unknown>;

/** A request body's fields; `{}` when there is none or it is not an object. */
function fields(body: unknown): Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

function text(value: unknown, name: string, max = 255): string {
  if (typeof value !== 'string' || value === '' || value.length > max) throw new InvalidParameter(`${name}: expected a non-empty string of at most ${max} characters`);
  return value;
}

function optionalText(value: unknown, name: string): string | undefined {
  return value === undefined ? undefined : text(value, name);
}

export const NODE_EXTRA_ACTIONS: Readonly<Record<string, Handler>> = {
  'GET vifs': async (ops, uuid) => ({ vifs: await listVifs(ops.nodeWork, uuid) }),

  'POST vif_attach': async (ops, uuid, body) => {
    const info = fields(fields(body).vif_info);
    const vif: VifInfo = { id: text(info.id, 'id') };
    const port = optionalText(info.port_uuid, 'port_uuid');
    const group = optionalText(info.portgroup_uuid, 'portgroup_uuid');
    if (port !== undefined) vif.port_uuid = port;
    if (group !== undefined) vif.portgroup_uuid = group;
    await attachVif(ops.nodeWork, uuid, vif);
    return { ok: true };
  },

  'POST vif_detach': async (ops, uuid, body) => {
    await detachVif(ops.nodeWork, uuid, text(fields(body).vif_id, 'vif_id'));
    return { ok: true };
  },

  'POST inject_nmi': async (ops, uuid) => {
    await injectNmi(ops.nodeWork, uuid);
    return { ok: true };
  },

  'GET indicators': (ops, uuid) => supportedIndicators(ops.nodeWork, uuid),

  'POST indicator_state': async (ops, uuid, body) => {
    const { component, name } = fields(body);
    return { state: await getIndicatorState(ops.nodeWork, uuid, text(component, 'component'), text(name, 'name')) };
  },

  'POST set_indicator_state': async (ops, uuid, body) => {
    const { component, name, state } = fields(body);
    if (!isIndicatorState(state)) throw new InvalidParameter(`state: expected one of OFF, ON, BLINKING, UNKNOWN, got ${JSON.stringify(state)}`);
    await setIndicatorState(ops.nodeWork, uuid, text(component, 'component'), text(name, 'name'), state);
    return { ok: true };
  },

  'GET vendor_methods': (ops, uuid) => vendorMethods(ops.nodeWork, uuid),

  'POST vendor_passthru': async (ops, uuid, body) => {
    const { method, http_method: httpMethod, data } = fields(body);
    if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new InvalidParameter('data: expected a JSON object');
    return vendorPassthru(ops.nodeWork, uuid, text(method, 'method'), text(httpMethod, 'http_method', 16), data as Record<string, unknown>);
  },
};
