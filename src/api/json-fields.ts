/**
 * Limits on the JSON fields a request stores (a node's driver_info, properties, extra,
 * instance_info; a port's extra and local_link_connection): nesting at most `[api] max_json_depth`
 * and size at most `[api] max_json_field_size` — checked on the value the field would hold after
 * the request, so that no sequence of small patches grows a field past them either.
 */
import { InvalidParameter } from '../common/errors.js';
import { jsonDepth } from '../common/json-safety.js';
import type { Config } from '../config/options.js';

/** Largest request body accepted; bigger ones get 413. Also the bound of `instance_info`. */
export const BODY_LIMIT = 1024 * 1024;

/** The limits one API applies, from its `[api]` options. */
export interface JsonFieldLimits {
  maxDepth: number;
  maxBytes: number;
}

export function jsonFieldLimits(config: Config): JsonFieldLimits {
  return { maxDepth: config.api.max_json_depth, maxBytes: config.api.max_json_field_size };
}

/**
 * Throws a 400 naming `field` when `value` nests deeper than allowed or is larger than allowed.
 * `instance_info` may carry a config drive (as Ironic's long-text column), so only the request body
 * limit bounds its size.
 */
export function checkJsonField(field: string, value: unknown, limits: JsonFieldLimits): void {
  const depth = jsonDepth(value, limits.maxDepth);
  if (depth > limits.maxDepth) {
    throw new InvalidParameter(`${field}: nested deeper than ${limits.maxDepth} levels of objects and arrays ([api] max_json_depth); flatten it`);
  }
  const maxBytes = field === 'instance_info' ? BODY_LIMIT : limits.maxBytes;
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > maxBytes) {
    throw new InvalidParameter(`${field}: ${bytes} bytes of JSON, more than the ${maxBytes} accepted${field === 'instance_info' ? '' : ' ([api] max_json_field_size)'}`);
  }
}
