/**
 * Reading driver fields out of a node's JSON columns (`driver_info`, `instance_info`): each reader
 * either returns a well-typed value or throws `InvalidParameterValue` naming the field, so every
 * interface's `validate` is a handful of calls and its message tells the operator what to set.
 */
import { InvalidParameterValue } from './errors.js';

/** A JSON column and its name for messages, e.g. `{ name: 'driver_info', value: node.driver_info }`. */
export interface FieldBag {
  name: 'driver_info' | 'instance_info' | 'properties';
  value: Readonly<Record<string, unknown>>;
}

/** Where an image comes from and what it hashes to (the boot environment's `ImageSource`). */
export interface ImageRef {
  url: string;
  checksum: string;
}

const CHECKSUM = /^(sha256|sha512|md5):[0-9a-fA-F]+$/;
const IMAGE_URL = /^(file|https?):\/\//;

function present(bag: FieldBag, key: string): unknown {
  const value = bag.value[key];
  return value === null || value === '' ? undefined : value;
}

/** A non-empty string field, or undefined when absent. */
export function optionalString(bag: FieldBag, key: string): string | undefined {
  const value = present(bag, key);
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InvalidParameterValue(`${bag.name}.${key}`, `must be a string, not ${JSON.stringify(value)}`);
  return value;
}

/** A non-empty string field that must be there; `purpose` ends the message ("is required by …"). */
export function requiredString(bag: FieldBag, key: string, purpose: string): string {
  const value = optionalString(bag, key);
  if (value === undefined) throw new InvalidParameterValue(`${bag.name}.${key}`, `is required by ${purpose}`);
  return value;
}

/** An integer field within [min, max]; strings of digits count (Ironic clients send strings). */
export function optionalInteger(bag: FieldBag, key: string, min: number, max: number): number | undefined {
  const value = present(bag, key);
  if (value === undefined) return undefined;
  const number = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value.trim()) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
    throw new InvalidParameterValue(`${bag.name}.${key}`, `must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`);
  }
  return number;
}

/** A string field restricted to `allowed`. */
export function optionalChoice<T extends string>(bag: FieldBag, key: string, allowed: readonly T[]): T | undefined {
  const value = optionalString(bag, key);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new InvalidParameterValue(`${bag.name}.${key}`, `must be one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`);
  }
  return value as T;
}

/**
 * An image named by `key` (a `file://` or `http(s)://` URL) with its checksum in `<key>_checksum`
 * (`sha256:<hex>`, `sha512:<hex>` or `md5:<hex>`): the boot environment verifies every image it links.
 */
export function requiredImage(bag: FieldBag, key: string, purpose: string): ImageRef {
  const url = requiredString(bag, key, purpose);
  if (!IMAGE_URL.test(url)) throw new InvalidParameterValue(`${bag.name}.${key}`, `must be a file://, http:// or https:// URL, not ${JSON.stringify(url)}`);
  const checksumKey = `${key}_checksum`;
  const checksum = requiredString(bag, checksumKey, `${purpose} (every image is verified)`);
  if (!CHECKSUM.test(checksum)) {
    throw new InvalidParameterValue(`${bag.name}.${checksumKey}`, `must be sha256:<hex>, sha512:<hex> or md5:<hex>, not ${JSON.stringify(checksum)}`);
  }
  return { url, checksum: checksum.toLowerCase() };
}

/** One key an interface implementation reads from a node's JSON column. */
export interface DriverField {
  /** The JSON column it lives in. */
  readonly bag: FieldBag['name'];
  /** The key, Ironic's name where Ironic has one (`ipmi_address`, `deploy_kernel`…). */
  readonly key: string;
  /** When the interface refuses to work without it; undefined when it is optional. */
  readonly requiredFor?: string;
  /** What it is, its format, and its default when optional. */
  readonly description: string;
}

const IPMI_FIELDS: readonly DriverField[] = [
  { bag: 'driver_info', key: 'ipmi_address', requiredFor: 'every power and boot-device action', description: 'Host name or IP address of the BMC.' },
  { bag: 'driver_info', key: 'ipmi_port', description: 'UDP port of the BMC, 1–65535. Default 623.' },
  { bag: 'driver_info', key: 'ipmi_username', description: 'BMC user. Default: none (anonymous).' },
  { bag: 'driver_info', key: 'ipmi_password', description: 'BMC password; an empty string is a valid (null) password. Passed to ipmitool in its environment, never on its command line; shown as `******` by the API.' },
  { bag: 'driver_info', key: 'ipmi_protocol_version', description: '`2.0` (ipmitool `-I lanplus`) or `1.5` (`-I lan`). Default `2.0`.' },
  { bag: 'driver_info', key: 'ipmi_priv_level', description: '`ADMINISTRATOR`, `OPERATOR`, `USER` or `CALLBACK`. Default `ADMINISTRATOR`.' },
  { bag: 'driver_info', key: 'ipmi_cipher_suite', description: 'IPMI cipher suite 0–17 (ipmitool `-C`); needs protocol version 2.0. Default: ipmitool\'s.' },
];

const BOOT_MODE_FIELDS: readonly DriverField[] = [
  { bag: 'instance_info', key: 'deploy_boot_mode', description: '`bios` or `uefi`: the firmware boot mode, first choice.' },
  { bag: 'properties', key: 'capabilities', description: '`boot_mode:bios` or `boot_mode:uefi` in Ironic\'s `"key:value,…"` string (or an object): the boot mode when `instance_info.deploy_boot_mode` is unset. Default `bios`.' },
];

const NETWORK_BOOT_FIELDS: readonly DriverField[] = [
  { bag: 'driver_info', key: 'deploy_kernel', requiredFor: 'validate, and every boot of the deploy ramdisk', description: 'Deploy kernel: a `file://`, `http://` or `https://` URL.' },
  { bag: 'driver_info', key: 'deploy_kernel_checksum', requiredFor: 'validate (every image is verified)', description: '`sha256:<hex>`, `sha512:<hex>` or `md5:<hex>` of `deploy_kernel`.' },
  { bag: 'driver_info', key: 'deploy_ramdisk', requiredFor: 'validate, and every boot of the deploy ramdisk', description: 'Deploy ramdisk: a `file://`, `http://` or `https://` URL.' },
  { bag: 'driver_info', key: 'deploy_ramdisk_checksum', requiredFor: 'validate (every image is verified)', description: 'Checksum of `deploy_ramdisk`, as `deploy_kernel_checksum`.' },
  { bag: 'driver_info', key: 'kernel_append_params', description: 'Kernel command line of the deploy ramdisk (one line); also the instance\'s when `instance_info.kernel_append_params` is unset.' },
  { bag: 'instance_info', key: 'kernel', requiredFor: 'booting a network-booted instance', description: 'Instance kernel: a `file://`, `http://` or `https://` URL.' },
  { bag: 'instance_info', key: 'kernel_checksum', requiredFor: 'booting a network-booted instance', description: 'Checksum of `kernel`, as `deploy_kernel_checksum`.' },
  { bag: 'instance_info', key: 'ramdisk', requiredFor: 'booting a network-booted instance', description: 'Instance ramdisk: a `file://`, `http://` or `https://` URL.' },
  { bag: 'instance_info', key: 'ramdisk_checksum', requiredFor: 'booting a network-booted instance', description: 'Checksum of `ramdisk`, as `deploy_kernel_checksum`.' },
  { bag: 'instance_info', key: 'kernel_append_params', description: 'Kernel command line of the instance (one line). Default: `driver_info.kernel_append_params`.' },
  ...BOOT_MODE_FIELDS,
];

const RAMDISK_DEPLOY_FIELDS: readonly DriverField[] = [
  { bag: 'instance_info', key: 'kernel', requiredFor: 'validate and deploy', description: 'Instance kernel, booted from the network on every boot (see the boot interface).' },
  { bag: 'instance_info', key: 'kernel_checksum', requiredFor: 'validate and deploy', description: 'Checksum of `kernel`.' },
  { bag: 'instance_info', key: 'ramdisk', requiredFor: 'validate and deploy', description: 'Instance ramdisk, booted from the network on every boot.' },
  { bag: 'instance_info', key: 'ramdisk_checksum', requiredFor: 'validate and deploy', description: 'Checksum of `ramdisk`.' },
];

const DIRECT_DEPLOY_FIELDS: readonly DriverField[] = [
  { bag: 'instance_info', key: 'image_source', requiredFor: 'validate and deploy', description: 'The whole-disk image the agent writes: an `http://` or `https://` URL the node can reach, without credentials (ironring has no image service).' },
  { bag: 'instance_info', key: 'image_os_hash_algo', requiredFor: 'validate and deploy', description: '`sha256`, `sha384` or `sha512`: the digest the agent verifies the written image against. The legacy `image_checksum` (sha256/sha384/sha512 hex, optionally `<algo>:`) is read when both `image_os_hash_*` are unset; md5 is refused.' },
  { bag: 'instance_info', key: 'image_os_hash_value', requiredFor: 'validate and deploy', description: 'The image\'s digest in hex.' },
  { bag: 'instance_info', key: 'image_disk_format', description: '`raw` (the default: the agent streams `image_source`) or `qcow2` (the owning conductor converts it with qemu-img and serves the raw result; docs/deploy.md). The agent refuses an image whose first bytes say qcow2, vmdk, vhdx or vdi.' },
  { bag: 'instance_info', key: 'image_type', description: '`whole-disk` (the default, and the only kind written). `partition`, like `kernel` and `ramdisk` both set beside the image (Ironic\'s marks of a partition image), is refused by validate and deploy: partition images are not supported yet.' },
  { bag: 'instance_info', key: 'kernel', description: 'Not used; set together with `ramdisk` it marks a partition image, which is refused (see `image_type`).' },
  { bag: 'instance_info', key: 'ramdisk', description: 'Not used; see `kernel`.' },
  { bag: 'instance_info', key: 'root_device', description: 'Root device hints choosing the disk (see docs/deploy.md). Default `properties.root_device`.' },
  { bag: 'instance_info', key: 'configdrive', description: 'The config drive: a gzipped, base64-encoded ISO 9660 image labelled `config-2`, or an http(s) URL of that text (what `baremetal node deploy --config-drive <dir>` stores), or its JSON form, an object of `meta_data`, `network_data`, `user_data` and `vendor_data` (what `ironring node deploy --config-drive` stores), which the conductor builds into the ISO (genisoimage) when the deploy starts. The agent writes it to a 64 MiB partition at the end of the disk. Default: none.' },
  { bag: 'properties', key: 'root_device', description: 'Root device hints when `instance_info.root_device` is unset. Default: the smallest disk of at least 4 GiB.' },
];

/**
 * The keys each interface implementation reads from `driver_info`, `instance_info` and `properties`,
 * by `<interface type>/<implementation>`. The readers above are what enforce them; this list is what
 * docs/driver-fields.md is generated from (`npm run docs:driver-fields`), and test/drivers/
 * driver-fields.test.ts checks it against what the interfaces actually read and require. An
 * implementation that reads nothing (the `fake` ones, `noop`, `no-*`) is absent.
 */
export const INTERFACE_FIELDS: Readonly<Record<string, readonly DriverField[]>> = {
  'power/ipmitool': IPMI_FIELDS,
  'management/ipmitool': [...IPMI_FIELDS, ...BOOT_MODE_FIELDS],
  'boot/pxe': NETWORK_BOOT_FIELDS,
  'boot/ipxe': NETWORK_BOOT_FIELDS,
  'deploy/ramdisk': RAMDISK_DEPLOY_FIELDS,
  'deploy/direct': DIRECT_DEPLOY_FIELDS,
};
