/**
 * Validation at the edge of `boot`: everything that ends up in a file name, a config line or a DHCP
 * entry is checked here once, so the rest of the code can trust its inputs.
 */
import { isUuid } from '../common/uuid.js';
import { InvalidBootInput } from './errors.js';
import { ALL_BOOT_LABELS, BOOT_INTERFACES, BOOT_MODES, CHECKSUM_ALGORITHMS } from './types.js';
import type { BootInterface, BootLabel, BootMode, ChecksumAlgorithm } from './types.js';

const MAC = /^[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}$/i;
const HEX_LENGTH: Record<ChecksumAlgorithm, number> = { sha256: 64, sha512: 128, md5: 32 };

/** Returns the uuid in lower case; throws `InvalidBootInput` unless it is a canonical uuid. */
export function normalizeUuid(value: string, field = 'node.uuid'): string {
  if (!isUuid(value)) throw new InvalidBootInput(field, `${JSON.stringify(value)} is not a uuid`);
  return value.toLowerCase();
}

/** Returns the MAC as `aa:bb:cc:dd:ee:ff`; throws `InvalidBootInput` unless it is six hex octets. */
export function normalizeMac(value: string, field = 'port.address'): string {
  if (!MAC.test(value)) throw new InvalidBootInput(field, `${JSON.stringify(value)} is not a MAC address`);
  return value.toLowerCase().replaceAll('-', ':');
}

/** A checksum split into algorithm and lower-case hex digest. */
export interface ParsedChecksum {
  algorithm: ChecksumAlgorithm;
  hex: string;
}

/** Parses `algo:hex`; the digest length must match the algorithm. */
export function parseChecksum(value: string, field = 'image.checksum'): ParsedChecksum {
  const i = value.indexOf(':');
  const algorithm = value.slice(0, i).toLowerCase() as ChecksumAlgorithm;
  const hex = value.slice(i + 1).toLowerCase();
  if (i < 0 || !CHECKSUM_ALGORITHMS.includes(algorithm)) {
    throw new InvalidBootInput(field, `${JSON.stringify(value)} must be sha256:<hex>, sha512:<hex> or md5:<hex>`);
  }
  if (hex.length !== HEX_LENGTH[algorithm] || !/^[0-9a-f]+$/.test(hex)) {
    throw new InvalidBootInput(field, `${algorithm} digest must be ${HEX_LENGTH[algorithm]} hex digits`);
  }
  return { algorithm, hex };
}

/** Kernel parameters go into one config line: no line breaks or control characters. */
export function checkParams(value: string | undefined, field: string): string {
  if (value === undefined) return '';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new InvalidBootInput(field, 'must not contain line breaks or control characters');
  return value.trim();
}

/** A URL that is pasted into configs and DHCP options: http(s), no spaces or commas. */
export function checkHttpUrl(value: string, field = 'httpUrl'): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidBootInput(field, `${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidBootInput(field, 'must be an http:// or https:// URL');
  if (/[\s,"]/.test(value)) throw new InvalidBootInput(field, 'must not contain spaces, commas or quotes');
  return value.replace(/\/+$/, '');
}

function oneOf<T extends string>(allowed: readonly T[], value: string | undefined, fallback: T, field: string): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) throw new InvalidBootInput(field, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

export const checkBootMode = (v: string | undefined): BootMode => oneOf(BOOT_MODES, v, 'bios', 'node.bootMode');
export const checkLabel = (v: string | undefined): BootLabel => oneOf(ALL_BOOT_LABELS, v, 'deploy', 'node.label');
export const checkInterface = (v: string | undefined, fallback: BootInterface): BootInterface =>
  oneOf(BOOT_INTERFACES, v, fallback, 'node.bootInterface');
