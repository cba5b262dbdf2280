/**
 * What the LLDP an agent heard says about the switch port behind each NIC, from the inventory's
 * `interfaces[].lldp` (`[type, hex value]` pairs, IPA's format; src/agent/lldp.ts).
 *
 * `parseLldp` gives the fields of Ironic's `parse-lldp` hook that ironring derives (stored as
 * `plugin_data.parsed_lldp[interface]`): `switch_chassis_id` and `switch_port_id` (MACs as
 * aa:bb:…, network addresses as text, names as they are), `switch_port_description`,
 * `switch_system_name`, `switch_system_description`, `switch_mgmt_addresses`,
 * `switch_port_vlans` (802.1 VLAN name TLVs: `{id, name}`), `switch_port_untagged_vlan_id`
 * (802.1 port VLAN ID), `switch_port_mtu` (802.3 maximum frame size). Malformed TLVs are skipped,
 * never an error: the data comes from the wire.
 *
 * `localLinkFromLldp` is Ironic's `local-link-connection` hook: a port's `switch_id` from a chassis
 * ID that is a MAC, its `port_id` from a port ID that is a name, a locally assigned ID or a MAC,
 * `switch_info` from the system name.
 */

/** `plugin_data.parsed_lldp[interface]`. */
export interface ParsedLldp {
  switch_chassis_id?: string;
  switch_port_id?: string;
  switch_port_description?: string;
  switch_system_name?: string;
  switch_system_description?: string;
  switch_mgmt_addresses?: string[];
  switch_port_vlans?: Array<{ id: number; name: string }>;
  switch_port_untagged_vlan_id?: number;
  switch_port_mtu?: number;
}

/** TLVs looked at per interface; an LLDPDU fits in 1500 bytes, so a real one has far fewer. */
const MAX_TLVS = 256;
const TLV = { chassisId: 1, portId: 2, portDescription: 4, systemName: 5, systemDescription: 6, managementAddress: 8, organizational: 127 } as const;
/** Chassis ID subtypes (IEEE 802.1AB 8.5.2.2) and port ID subtypes (8.5.3.2) that ironring reads. */
const CHASSIS_MAC = 4;
const CHASSIS_NETWORK_ADDRESS = 5;
const PORT_MAC = 3;
const PORT_NETWORK_ADDRESS = 4;
const OUI_8021 = '0080c2';
const OUI_8023 = '00120f';

function mac(bytes: Buffer): string | null {
  return bytes.length === 6 ? [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(':') : null;
}

/** An IANA address family number (1 IPv4, 2 IPv6) and the address after it, as text. */
function networkAddress(bytes: Buffer): string | null {
  const family = bytes[0];
  const address = bytes.subarray(1);
  if (family === 1 && address.length === 4) return [...address].join('.');
  if (family === 2 && address.length === 16) {
    const groups: string[] = [];
    for (let i = 0; i < 16; i += 2) groups.push(address.readUInt16BE(i).toString(16));
    // The URL parser writes IPv6 in its canonical short form.
    return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
  }
  return null;
}

/** Printable text of a TLV value, or null when it has control bytes or is not UTF-8. */
function textOf(bytes: Buffer): string | null {
  const text = bytes.toString('utf8');
  // eslint-disable-next-line no-control-regex
  if (text.includes('\uFFFD') || /[\u0000-\u001f\u007f]/.test(text.replace(/[\r\n\t]/g, ' '))) return null;
  return text.trim() === '' ? null : text.trim();
}

/** The TLVs of one interface as [type, bytes], malformed entries left out. */
function tlvsOf(raw: unknown): Array<[number, Buffer]> {
  if (!Array.isArray(raw)) return [];
  const tlvs: Array<[number, Buffer]> = [];
  for (const entry of raw.slice(0, MAX_TLVS)) {
    if (!Array.isArray(entry) || entry.length !== 2) continue;
    const [type, value] = entry as unknown[];
    if (typeof type !== 'number' || !Number.isInteger(type) || type < 0 || type > 127) continue;
    if (typeof value !== 'string' || value.length > 1022 || !/^([0-9a-fA-F]{2})*$/.test(value)) continue;
    tlvs.push([type, Buffer.from(value, 'hex')]);
  }
  return tlvs;
}

/** Chassis or port ID → text: MACs and addresses decoded, names as they are. */
function identifier(bytes: Buffer, macSubtype: number, addressSubtype: number): string | null {
  if (bytes.length < 2) return null;
  const subtype = bytes[0];
  const value = bytes.subarray(1);
  if (subtype === macSubtype) return mac(value);
  if (subtype === addressSubtype) return networkAddress(value);
  return textOf(value);
}

/** The switch port one interface's LLDP describes, or null when it holds nothing usable. */
export function parseLldp(raw: unknown): ParsedLldp | null {
  const parsed: ParsedLldp = {};
  for (const [type, value] of tlvsOf(raw)) {
    if (type === TLV.chassisId) {
      const id = identifier(value, CHASSIS_MAC, CHASSIS_NETWORK_ADDRESS);
      if (id !== null) parsed.switch_chassis_id = id;
    } else if (type === TLV.portId) {
      const id = identifier(value, PORT_MAC, PORT_NETWORK_ADDRESS);
      if (id !== null) parsed.switch_port_id = id;
    } else if (type === TLV.portDescription || type === TLV.systemName || type === TLV.systemDescription) {
      const text = textOf(value);
      if (text === null) continue;
      if (type === TLV.portDescription) parsed.switch_port_description = text;
      else if (type === TLV.systemName) parsed.switch_system_name = text;
      else parsed.switch_system_description = text;
    } else if (type === TLV.managementAddress) {
      // Address string length (address family byte included), then the address.
      const length = value[0] ?? 0;
      const address = length >= 2 && value.length >= 1 + length ? networkAddress(value.subarray(1, 1 + length)) : null;
      if (address !== null) (parsed.switch_mgmt_addresses ??= []).push(address);
    } else if (type === TLV.organizational && value.length >= 4) {
      organizational(value, parsed);
    }
  }
  return Object.keys(parsed).length > 0 ? parsed : null;
}

/** 802.1 port VLAN ID (subtype 1) and VLAN name (3); 802.3 maximum frame size (4). */
function organizational(value: Buffer, parsed: ParsedLldp): void {
  const oui = value.subarray(0, 3).toString('hex');
  const subtype = value[3];
  const body = value.subarray(4);
  if (oui === OUI_8021 && subtype === 1 && body.length === 2) {
    const id = body.readUInt16BE(0);
    if (id > 0 && id < 4095) parsed.switch_port_untagged_vlan_id = id;
  } else if (oui === OUI_8021 && subtype === 3 && body.length >= 3) {
    const id = body.readUInt16BE(0);
    const length = body[2]!;
    const name = body.length >= 3 + length ? (textOf(body.subarray(3, 3 + length)) ?? '') : null;
    if (id > 0 && id < 4095 && name !== null) (parsed.switch_port_vlans ??= []).push({ id, name });
  } else if (oui === OUI_8023 && subtype === 4 && body.length === 2) {
    parsed.switch_port_mtu = body.readUInt16BE(0);
  }
}

/** `local_link_connection` keys the LLDP gives a port (Ironic's local-link-connection hook). */
export function localLinkFromLldp(raw: unknown): Record<string, string> {
  const link: Record<string, string> = {};
  for (const [type, value] of tlvsOf(raw)) {
    const subtype = value[0];
    const rest = value.subarray(1);
    if (type === TLV.chassisId && subtype === CHASSIS_MAC) {
      const id = mac(rest);
      if (id !== null) link.switch_id = id;
    } else if (type === TLV.portId && (subtype === PORT_MAC || subtype === 5 || subtype === 7)) {
      const id = subtype === PORT_MAC ? mac(rest) : textOf(rest);
      if (id !== null) link.port_id = id;
    } else if (type === TLV.systemName) {
      const name = textOf(value);
      if (name !== null) link.switch_info = name;
    }
  }
  return link;
}
