/**
 * What a node's agent posts at the end of its boot for inspection (`POST /v1/continue_inspection`,
 * Ironic's ramdisk endpoint): `{"inventory": {...}, ...plugin data}`, the inventory in
 * ironic-python-agent's shape (`src/agent/inventory.ts` collects it). The route answers callers
 * without user credentials, so everything is bounded and checked here before it reaches a
 * conductor: the body's size (by the route), its depth and keys, and the inventory's minimum —
 * Ironic's own: an `interfaces` array whose entries carry a `mac_address`.
 */
import { InvalidParameter } from '../common/errors.js';
import { checkJsonDocument } from '../common/json-safety.js';
import { MAX_AGENT_TOKEN_LENGTH } from './protocol.js';

/** Largest body accepted: an inventory of a large server is ~100 KiB; room for plugin data. */
export const INSPECTION_BODY_LIMIT = 2 * 1024 * 1024;
/** Deepest nesting accepted (the inventory itself is 4 levels deep; LLDP TLVs add two). */
export const INSPECTION_MAX_DEPTH = 12;
/** Most interfaces one inventory may list. */
export const MAX_INVENTORY_INTERFACES = 256;

const MAC = /^([0-9a-f]{2}):([0-9a-f]{2}):([0-9a-f]{2}):([0-9a-f]{2}):([0-9a-f]{2}):([0-9a-f]{2})$/i;

/** An inspection report, checked. */
export interface InspectionData {
  inventory: Record<string, unknown>;
  /** Everything else the agent sent (Ironic's plugin data), `agent_token` taken out. */
  pluginData: Record<string, unknown>;
  /** The valid MACs of the inventory's interfaces, lower case, to find the node by. */
  macs: string[];
  /** The node's agent token, when the agent looked up first and sends it (ironring's agent does). */
  agentToken: string | null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks a continue_inspection body; `InvalidParameter` (400) naming the field otherwise. */
export function parseInspectionData(body: unknown): InspectionData {
  if (!isObject(body)) throw new InvalidParameter('request body: expected a JSON object with "inventory"');
  checkJsonDocument(body, { maxDepth: INSPECTION_MAX_DEPTH, source: 'inspection data' });
  const { inventory, agent_token: token, ...pluginData } = body;
  if (!isObject(inventory)) throw new InvalidParameter('inventory: required, an object (the agent\'s hardware inventory)');
  const interfaces = inventory.interfaces;
  if (!Array.isArray(interfaces) || interfaces.length === 0) throw new InvalidParameter('inventory.interfaces: required, a non-empty array');
  if (interfaces.length > MAX_INVENTORY_INTERFACES) throw new InvalidParameter(`inventory.interfaces: at most ${MAX_INVENTORY_INTERFACES} interfaces`);
  const macs = new Set<string>();
  interfaces.forEach((iface, i) => {
    if (!isObject(iface) || typeof iface.mac_address !== 'string') throw new InvalidParameter(`inventory.interfaces[${i}].mac_address: required, a string`);
    if (MAC.test(iface.mac_address) && !/^(00:){5}00$/.test(iface.mac_address)) macs.add(iface.mac_address.toLowerCase());
  });
  if (token !== undefined && (typeof token !== 'string' || token.length === 0 || token.length > MAX_AGENT_TOKEN_LENGTH)) {
    throw new InvalidParameter(`agent_token: expected a string of 1 to ${MAX_AGENT_TOKEN_LENGTH} characters`);
  }
  if (macs.size === 0) throw new InvalidParameter('inventory.interfaces: no valid MAC address to find the node by');
  return { inventory, pluginData, macs: [...macs], agentToken: typeof token === 'string' ? token : null };
}
