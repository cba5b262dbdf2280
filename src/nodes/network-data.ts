/**
 * A node's `network_data` (Ironic's API 1.66): the static network configuration a config drive
 * carries for the instance, in the format of Nova's `network_data.json` — `links` (physical NICs,
 * bonds, VLANs), `networks` (IPv4/IPv6 addresses, routes) and `services` (DNS servers). `{}` means
 * none. The rules are the format's (the schema Ironic checks it against), written out here so a
 * refusal names the offending path; keys the format does not name are kept, as Ironic keeps them.
 * Pure; the size and depth of the whole value are bounded by the API (`[api] max_json_field_size`).
 */
import { isIPv4, isIPv6 } from 'node:net';

type Json = Record<string, unknown>;
type Rule = (v: unknown) => string | null;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const MAC = /^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$/i;
export const LINK_TYPES = ['bridge', 'dvs', 'hw_veb', 'hyperv', 'ovs', 'tap', 'vhostuser', 'vif', 'phy'] as const;
export const BOND_MODES = ['802.1ad', 'balance-rr', 'active-backup', 'balance-xor', 'broadcast', 'balance-tlb', 'balance-alb'] as const;
const IPV4_TYPES = ['ipv4', 'ipv4_dhcp'] as const;
const IPV6_TYPES = ['ipv6', 'ipv6_dhcp', 'ipv6_slaac'] as const;

const str: Rule = (v) => (typeof v === 'string' ? null : 'expected a string');
const oneOf = (values: readonly string[]): Rule => (v) => (typeof v === 'string' && values.includes(v) ? null : `expected one of ${values.join(', ')}`);
const mac: Rule = (v) => (typeof v === 'string' && MAC.test(v) ? null : 'expected a MAC address such as fa:16:3e:9c:bf:3d');
const mtu: Rule = (v) => (v === null || (typeof v === 'number' && v >= 1 && v <= 65535) ? null : 'expected a number from 1 to 65535, or null');
const integer: Rule = (v) => (typeof v === 'number' && Number.isInteger(v) ? null : 'expected an integer');
const stringList: Rule = (v) => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? null : 'expected a list of strings');
const ipv4: Rule = (v) => (typeof v === 'string' && isIPv4(v) ? null : 'expected an IPv4 address');
const ipv6: Rule = (v) => (typeof v === 'string' && isIPv6(v) ? null : 'expected an IPv6 address');
/** An IPv6 host may carry its prefix length (`2001:db8::5/64`). */
const ipv6Host: Rule = (v) => {
  if (typeof v !== 'string') return 'expected an IPv6 address';
  const [address, prefix, ...rest] = v.split('/');
  return isIPv6(address!) && rest.length === 0 && (prefix === undefined || /^[0-9]{1,2}$/.test(prefix)) ? null : 'expected an IPv6 address, with or without a /prefix';
};
/** A contiguous IPv4 netmask (`255.255.252.0`), as the format's pattern: not all ones. */
const ipv4Netmask: Rule = (v) => {
  if (typeof v !== 'string' || !isIPv4(v)) return 'expected an IPv4 netmask such as 255.255.255.0';
  const bits = v.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const inverted = 0xffffffff - bits;
  return bits !== 0xffffffff && (inverted & (inverted + 1)) === 0 ? null : 'expected an IPv4 netmask such as 255.255.255.0';
};
/** An IPv6 netmask, written as an address (`ffff:ffff:ffff:ffff::`). */
const ipv6Netmask: Rule = (v) => (typeof v === 'string' && isIPv6(v) && !v.includes('.') ? null : 'expected an IPv6 netmask such as ffff:ffff:ffff:ffff::');

/** An object with its required keys, each key it names checked; `where` prefixes each problem. */
function checkObject(where: string, value: unknown, required: readonly string[], rules: Readonly<Record<string, Rule>>): string | null {
  if (!isObject(value)) return `${where}: expected an object`;
  for (const key of required) if (!Object.hasOwn(value, key)) return `${where}.${key}: required`;
  for (const [key, rule] of Object.entries(rules)) {
    if (!Object.hasOwn(value, key)) continue;
    const problem = rule(value[key]);
    if (problem !== null) return `${where}.${key}: ${problem}`;
  }
  return null;
}

/** Each item of a list by `check`; the first problem. */
function checkList(where: string, value: unknown, check: (where: string, item: unknown) => string | null): string | null {
  if (!Array.isArray(value)) return `${where}: expected a list`;
  for (let i = 0; i < value.length; i++) {
    const problem = check(`${where}[${i}]`, value[i]);
    if (problem !== null) return problem;
  }
  return null;
}

const l2Common = { id: str, mtu, vif_id: str };

function checkLink(where: string, link: unknown): string | null {
  if (!isObject(link)) return `${where}: expected an object`;
  // The link's type says which of the three shapes it must have.
  if (link.type === 'bond') {
    return checkObject(where, link, ['ethernet_mac_address', 'id', 'type', 'bond_mode', 'bond_links'], { ...l2Common, ethernet_mac_address: mac, bond_mode: oneOf(BOND_MODES), bond_links: stringList });
  }
  if (link.type === 'vlan') {
    return checkObject(where, link, ['vlan_mac_address', 'id', 'type', 'vlan_link', 'vlan_id'], { ...l2Common, vlan_mac_address: mac, vlan_link: str, vlan_id: integer });
  }
  return checkObject(where, link, ['ethernet_mac_address', 'id', 'type'], { ...l2Common, ethernet_mac_address: mac, type: oneOf([...LINK_TYPES, 'bond', 'vlan']) });
}

const service = (address: Rule) => (where: string, s: unknown) => checkObject(where, s, ['address', 'type'], { address, type: oneOf(['dns']) });

function checkNetwork(where: string, network: unknown): string | null {
  if (!isObject(network)) return `${where}: expected an object`;
  const v6 = typeof network.type === 'string' && network.type.startsWith('ipv6');
  const route = (w: string, r: unknown) =>
    checkObject(w, r, ['gateway', 'netmask', 'network'], v6 ? { network: ipv6, netmask: ipv6Netmask, gateway: ipv6 } : { network: ipv4, netmask: ipv4Netmask, gateway: ipv4 }) ??
    (isObject(r) && Object.hasOwn(r, 'services') ? checkList(`${w}.services`, r.services, service(v6 ? ipv6Host : ipv4)) : null);
  return (
    checkObject(where, network, ['id', 'link', 'network_id', 'type'], {
      id: str,
      link: str,
      network_id: str,
      type: oneOf([...IPV4_TYPES, ...IPV6_TYPES]),
      ip_address: v6 ? ipv6Host : ipv4,
      netmask: v6 ? ipv6Netmask : ipv4Netmask,
    }) ?? (Object.hasOwn(network, 'routes') ? checkList(`${where}.routes`, network.routes, route) : null)
  );
}

/**
 * What is wrong with a `network_data` value (`where: problem`), or null when it is fine: `{}` (none),
 * or an object with `links`, `networks` and `services` in the format.
 */
export function networkDataProblem(value: unknown, where = 'network_data'): string | null {
  if (!isObject(value)) return `${where}: expected a JSON object`;
  if (Object.keys(value).length === 0) return null;
  for (const key of ['links', 'networks', 'services']) if (!Object.hasOwn(value, key)) return `${where}.${key}: required (or send {} for no network data)`;
  return (
    checkList(`${where}.links`, value.links, checkLink) ??
    checkList(`${where}.networks`, value.networks, checkNetwork) ??
    checkList(`${where}.services`, value.services, (w, s) => (isObject(s) && typeof s.address === 'string' && s.address.includes(':') ? service(ipv6Host)(w, s) : service(ipv4)(w, s)))
  );
}
