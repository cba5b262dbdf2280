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
