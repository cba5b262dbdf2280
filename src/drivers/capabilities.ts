/**
 * A node's firmware boot mode, which both the boot files (PXELINUX vs GRUB) and the boot-device
 * request (`efiboot`) depend on. Looked up the way Ironic does: `instance_info.deploy_boot_mode`,
 * then `boot_mode` in `properties.capabilities` (`"boot_mode:uefi,…"` or an object).
 */
import { InvalidParameterValue } from './errors.js';
import type { DriverNode } from './task.js';

export const NODE_BOOT_MODES = ['bios', 'uefi'] as const;
export type NodeBootMode = (typeof NODE_BOOT_MODES)[number];

function checkMode(field: string, value: unknown): NodeBootMode | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value === 'bios' || value === 'uefi') return value;
  throw new InvalidParameterValue(field, `must be bios or uefi, not ${JSON.stringify(value)}`);
}

/** The capabilities as a map, from either Ironic's `"k:v,k:v"` string or an object. */
export function parseCapabilities(value: unknown): Record<string, string> {
  if (typeof value === 'string') {
    return Object.fromEntries(
      value
        .split(',')
        .map((pair) => pair.trim())
        .filter((pair) => pair.includes(':'))
        .map((pair) => [pair.slice(0, pair.indexOf(':')).trim(), pair.slice(pair.indexOf(':') + 1).trim()]),
    );
  }
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)]));
  }
  return {};
}

/** The node's boot mode, or undefined for "the environment's default" (bios). */
export function nodeBootMode(node: DriverNode): NodeBootMode | undefined {
  return (
    checkMode('instance_info.deploy_boot_mode', node.instance_info.deploy_boot_mode) ??
    checkMode('properties.capabilities.boot_mode', parseCapabilities(node.properties.capabilities).boot_mode)
  );
}
