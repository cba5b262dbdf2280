/**
 * Parsing what ipmitool prints. Pure functions over stdout, tested against captured output of
 * ipmitool 1.8.19 and tolerant of case, spacing and extra lines.
 */
import type { BootDevice, BootDeviceState } from '../management.js';
import type { PowerState } from '../power.js';

/** `Chassis Power is on` → `power on`; null when the text says neither. */
export function parsePowerStatus(stdout: string): PowerState | null {
  const match = /chassis\s+power\s+is\s+(on|off)\b/i.exec(stdout);
  if (match === null) return null;
  return match[1]?.toLowerCase() === 'on' ? 'power on' : 'power off';
}

// IPMI boot flags (parameter 5), data byte 2 bits 5:2: the boot device selector.
const SELECTOR_DEVICES: Readonly<Record<number, BootDevice | null>> = {
  0x0: null, // no override
  0x1: 'pxe',
  0x2: 'disk',
  0x3: 'safe',
  0x5: 'cdrom',
  0x6: 'bios',
};

// The same selectors as ipmitool's text, for output without the data line.
const SELECTOR_TEXT: readonly [RegExp, BootDevice | null][] = [
  [/no override/i, null],
  [/force pxe/i, 'pxe'],
  [/hard-?drive.*safe|safe.?mode/i, 'safe'],
  [/hard-?drive/i, 'disk'],
  [/cd\/dvd|cdrom/i, 'cdrom'],
  [/bios setup/i, 'bios'],
];

/**
 * Reads `chassis bootparam get 5`: the device from the selector, persistence from the "all future
 * boots" bit. A device the interface does not model (floppy, diagnostic partition) reads as null.
 * Returns null when the output is not a boot-flags answer at all.
 */
export function parseBootParam(stdout: string): BootDeviceState | null {
  const data = /boot\s+parameter\s+data:\s*([0-9a-f]+)/i.exec(stdout)?.[1];
  if (data !== undefined && data.length >= 4) {
    const flags = Number.parseInt(data.slice(0, 2), 16);
    const device = Number.parseInt(data.slice(2, 4), 16);
    const valid = (flags & 0x80) !== 0;
    const persistent = (flags & 0x40) !== 0;
    const selector = (device >> 2) & 0x0f;
    return { boot_device: valid ? (SELECTOR_DEVICES[selector] ?? null) : null, persistent };
  }
  const selectorLine = /boot\s+device\s+selector\s*:\s*(.*)/i.exec(stdout)?.[1];
  if (selectorLine === undefined) return null;
  const found = SELECTOR_TEXT.find(([pattern]) => pattern.test(selectorLine));
  const persistent = /all\s+future\s+boots/i.test(stdout) ? true : /only\s+next\s+boot/i.test(stdout) ? false : null;
  return { boot_device: found === undefined ? null : found[1], persistent };
}

/**
 * The error text worth showing from a failed run: ipmitool's lines that say what went wrong
 * (deduplicated, since it repeats them per retry), else the last non-empty lines.
 */
export function errorSummary(stderr: string, stdout = ''): string {
  const lines = `${stderr}\n${stdout}`
    .split('\n')
    .map((l) => l.replace(/^>\s*/, '').trim())
    .filter((l) => l !== '');
  const unique = [...new Set(lines)];
  const errors = unique.filter((l) => /error|unable|invalid|fail|timeout|insufficient|unauthori[sz]ed/i.test(l));
  const chosen = errors.length > 0 ? errors : unique;
  return chosen.slice(-3).join('; ') || 'no output';
}
