/**
 * The `driver_info` of an IPMI node, read and checked once per call (Ironic's field names):
 * `ipmi_address` (required), `ipmi_port` (623), `ipmi_username`, `ipmi_password`,
 * `ipmi_protocol_version` (`2.0` → lanplus, `1.5` → lan), `ipmi_priv_level`, `ipmi_cipher_suite`.
 */
import { InvalidParameterValue } from '../errors.js';
import type { FieldBag } from '../fields.js';
import { optionalChoice, optionalInteger, optionalString, requiredString } from '../fields.js';

export const IPMI_PROTOCOL_VERSIONS = ['2.0', '1.5'] as const;
export const IPMI_PRIV_LEVELS = ['ADMINISTRATOR', 'OPERATOR', 'USER', 'CALLBACK'] as const;
export type IpmiPrivLevel = (typeof IPMI_PRIV_LEVELS)[number];
/** ipmitool's `-I` for each protocol version. */
export const IPMI_INTERFACES = ['lanplus', 'lan'] as const;
export type IpmiInterface = (typeof IPMI_INTERFACES)[number];

export const DEFAULT_IPMI_PORT = 623;

/** Everything ipmitool needs to reach one BMC. */
export interface IpmiDriverInfo {
  address: string;
  port: number;
  username?: string;
  password?: string;
  interface: IpmiInterface;
  privLevel: IpmiPrivLevel;
  cipherSuite?: number;
}

// Host names, IPv4 and bracket-less IPv6 (with zone). Anything else — spaces, leading dashes that
// ipmitool's option parser might take for a flag — is refused before it reaches argv.
const ADDRESS = /^[A-Za-z0-9_.:%[\]][A-Za-z0-9_.:%[\]-]*$/;

/** Parses and checks the IPMI fields of `driver_info`. Throws `InvalidParameterValue` naming the field. */
export function parseIpmiDriverInfo(driverInfo: Readonly<Record<string, unknown>>): IpmiDriverInfo {
  const bag: FieldBag = { name: 'driver_info', value: driverInfo };
  const address = requiredString(bag, 'ipmi_address', 'the ipmi hardware type').trim();
  if (!ADDRESS.test(address)) throw new InvalidParameterValue('driver_info.ipmi_address', `is not a host name or IP address: ${JSON.stringify(address)}`);
  const version = optionalChoice(bag, 'ipmi_protocol_version', IPMI_PROTOCOL_VERSIONS) ?? '2.0';
  const info: IpmiDriverInfo = {
    address,
    port: optionalInteger(bag, 'ipmi_port', 1, 65535) ?? DEFAULT_IPMI_PORT,
    interface: version === '2.0' ? 'lanplus' : 'lan',
    privLevel: optionalChoice(bag, 'ipmi_priv_level', IPMI_PRIV_LEVELS) ?? 'ADMINISTRATOR',
  };
  const username = optionalString(bag, 'ipmi_username');
  if (username !== undefined) info.username = username;
  // An empty password is a valid IPMI credential (null password), so only absence means "none".
  const password = driverInfo.ipmi_password;
  if (password !== undefined && password !== null) {
    if (typeof password !== 'string') throw new InvalidParameterValue('driver_info.ipmi_password', 'must be a string');
    info.password = password;
  }
  const cipherSuite = optionalInteger(bag, 'ipmi_cipher_suite', 0, 17);
  if (cipherSuite !== undefined) {
    if (info.interface !== 'lanplus') throw new InvalidParameterValue('driver_info.ipmi_cipher_suite', 'needs ipmi_protocol_version 2.0');
    info.cipherSuite = cipherSuite;
  }
  return info;
}

/** `address:port`, for messages and for serialising commands per BMC. */
export function bmcKey(info: IpmiDriverInfo): string {
  return info.address.includes(':') ? `[${info.address}]:${info.port}` : `${info.address}:${info.port}`;
}
