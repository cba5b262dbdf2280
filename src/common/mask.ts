/** Hides secrets before they reach a terminal, a log or an API response. */

export const MASK = '***';

/** What the API shows instead of a secret in `driver_info` and `instance_info` (Ironic's mask). */
export const MASKED = '******';

/** Keys whose values are secrets, wherever they sit in a JSON field. */
const SECRET_KEY = /password|secret|configdrive/i;

/** Replaces the password of a URL (`scheme://user:password@host/…`) with `***`. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)([^@]*)@/i, `$1${MASK}@`);
}

/**
 * A copy of a JSON object with the values of secret keys (`*password*`, `*secret*`, `configdrive`)
 * replaced by `******`, at any depth and inside arrays (`list[0].password`). Iterative, so a
 * deeply nested stored value cannot overflow the stack of the process rendering it; the copies
 * have no prototype, so no stored key (`__proto__` …) can reach one.
 */
export function maskSecrets(value: Record<string, unknown>): Record<string, unknown> {
  const root = Object.create(null) as Record<string, unknown>;
  const stack: Array<[source: Record<string, unknown> | unknown[], copy: Record<string, unknown> | unknown[]]> = [[value, root]];
  while (stack.length > 0) {
    const [source, copy] = stack.pop()!;
    const entries: Array<[string | number, unknown]> = Array.isArray(source) ? source.map((v, i) => [i, v]) : Object.entries(source);
    for (const [k, v] of entries) {
      let out: unknown = v;
      if (typeof k === 'string' && SECRET_KEY.test(k) && v !== null && v !== '') out = MASKED;
      else if (Array.isArray(v)) {
        out = new Array<unknown>(v.length);
        stack.push([v, out as unknown[]]);
      } else if (v !== null && typeof v === 'object') {
        out = Object.create(null) as Record<string, unknown>;
        stack.push([v as Record<string, unknown>, out as Record<string, unknown>]);
      }
      (copy as Record<string | number, unknown>)[k] = out;
    }
  }
  return root;
}
