/**
 * A node's RAID configuration as Ironic defines it (`drivers/raid_config_schema.json`,
 * `common/raid.py`): its rules checked here by hand so that a refusal names the offending key, and
 * the descriptions of the logical disk properties that `GET /v1/drivers/{d}/raid/logical_disk_properties`
 * answers. Pure.
 */
import { InvalidParameterValue } from './errors.js';

/** A target RAID configuration: at least one logical disk. */
export interface RaidConfig {
  logical_disks: Array<Record<string, unknown>>;
}

export const RAID_LEVELS = ['JBOD', '0', '1', '2', '5', '6', '1+0', '5+0', '6+0'] as const;
export const RAID_DISK_TYPES = ['hdd', 'ssd'] as const;
export const RAID_INTERFACE_TYPES = ['sata', 'scsi', 'sas'] as const;

/** Each logical disk property and what it means, as Ironic describes them. */
export const LOGICAL_DISK_PROPERTIES: Readonly<Record<string, string>> = {
  raid_level: "RAID level for the logical disk. Valid values are 'JBOD', '0', '1', '2', '5', '6', '1+0', '5+0' and '6+0'. Required.",
  size_gb: "Size in GiB (Integer) for the logical disk. Use 'MAX' as size_gb if this logical disk is supposed to use the rest of the space available. Required.",
  volume_name: 'Name of the volume to be created. If this is not specified, it will be auto-generated. Optional.',
  is_root_volume: 'Specifies whether this disk is a root volume. By default, this is False. Optional.',
  share_physical_disks: 'Specifies whether other logical disks can share physical disks with this logical disk. By default, this is False. Optional.',
  disk_type: "The type of disk preferred. Valid values are 'hdd' and 'ssd'. If this is not specified, disk type will not be a selection criterion for choosing backing physical disks. Optional.",
  interface_type: "The interface type of disk. Valid values are 'sata', 'scsi' and 'sas'. If this is not specified, interface type will not be a selection criterion for choosing backing physical disks. Optional.",
  number_of_physical_disks: 'Number of physical disks to use for this logical disk. By default, the driver uses the minimum number of disks required for that RAID level. Optional.',
  controller: 'Controller to use for this logical disk. If not specified, the driver will choose a suitable RAID controller on the bare metal node. Optional.',
  physical_disks: 'The physical disks to use for this logical disk. If not specified, the driver will choose suitable physical disks to use. Optional.',
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/** One property's rule: null when the value is fine, else what was expected. */
const RULES: Readonly<Record<string, (v: unknown) => string | null>> = {
  raid_level: (v) => (typeof v === 'string' && (RAID_LEVELS as readonly string[]).includes(v) ? null : `expected one of ${RAID_LEVELS.join(', ')} (a string)`),
  size_gb: (v) => ((isInteger(v) && v >= 0) || v === 'MAX' ? null : 'expected a whole number of GiB (0 or more) or "MAX"'),
  volume_name: (v) => (typeof v === 'string' ? null : 'expected a string'),
  is_root_volume: (v) => (typeof v === 'boolean' ? null : 'expected true or false'),
  share_physical_disks: (v) => (typeof v === 'boolean' ? null : 'expected true or false'),
  disk_type: (v) => (typeof v === 'string' && (RAID_DISK_TYPES as readonly string[]).includes(v) ? null : `expected one of ${RAID_DISK_TYPES.join(', ')}`),
  interface_type: (v) => (typeof v === 'string' && (RAID_INTERFACE_TYPES as readonly string[]).includes(v) ? null : `expected one of ${RAID_INTERFACE_TYPES.join(', ')}`),
  number_of_physical_disks: (v) => (isInteger(v) && v > 0 ? null : 'expected a whole number greater than 0'),
  controller: (v) => (typeof v === 'string' ? null : 'expected a string'),
  physical_disks: (v) => {
    if (!Array.isArray(v)) return 'expected a list of disk names, or of at least 2 objects';
    if (v.every((d) => typeof d === 'string')) return null;
    return v.length >= 2 && v.every(isObject) ? null : 'expected a list of disk names, or of at least 2 objects';
  },
};

/**
 * Checks a target RAID configuration against Ironic's rules: an object with `logical_disks` only, a
 * non-empty list of objects each with `raid_level` and `size_gb`, only known properties, each of its
 * kind, `physical_disks` only with `controller`, and at most one root volume. `where` names the
 * value in messages (`target_raid_config`). Throws `InvalidParameterValue` (400).
 */
export function checkRaidConfig(config: unknown, where = 'target_raid_config'): RaidConfig {
  if (!isObject(config)) throw new InvalidParameterValue(where, 'expected a JSON object');
  for (const key of Object.keys(config)) {
    if (key !== 'logical_disks') throw new InvalidParameterValue(`${where}.${key}`, 'is not a RAID configuration key (only logical_disks)');
  }
  const disks = config.logical_disks;
  if (disks === undefined) throw new InvalidParameterValue(`${where}.logical_disks`, 'is required');
  if (!Array.isArray(disks) || disks.length === 0) throw new InvalidParameterValue(`${where}.logical_disks`, 'expected a non-empty list of logical disks');
  disks.forEach((disk, i) => {
    const at = `${where}.logical_disks[${i}]`;
    if (!isObject(disk)) throw new InvalidParameterValue(at, 'expected a JSON object');
    for (const [key, value] of Object.entries(disk)) {
      const rule = Object.hasOwn(RULES, key) ? RULES[key]! : undefined;
      if (rule === undefined) throw new InvalidParameterValue(`${at}.${key}`, `is not a logical disk property; known: ${Object.keys(RULES).join(', ')}`);
      const problem = rule(value);
      if (problem !== null) throw new InvalidParameterValue(`${at}.${key}`, `${problem}, got ${JSON.stringify(value)}`);
    }
    for (const key of ['raid_level', 'size_gb']) if (disk[key] === undefined) throw new InvalidParameterValue(`${at}.${key}`, 'is required');
    if (disk.physical_disks !== undefined && disk.controller === undefined) throw new InvalidParameterValue(`${at}.controller`, 'is required with physical_disks');
  });
  const roots = disks.filter((d: Record<string, unknown>) => d.is_root_volume === true).length;
  if (roots > 1) throw new InvalidParameterValue(`${where}.logical_disks`, `may have at most one root volume, ${roots} were specified`);
  return config as unknown as RaidConfig;
}
