/**
 * The one spelling of "is this a UUID" (8-4-4-4-12 hex digits, either case): identifiers that may
 * be a UUID or a name are told apart by it, so every place must agree.
 */

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The same rule as a JSON Schema `pattern` (schemas carry no regex flags). */
export const UUID_SCHEMA_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}
