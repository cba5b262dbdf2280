/**
 * Rules for JSON that comes from outside (request bodies, JSON Patch paths): keys that would reach
 * an object's prototype, strings a database cannot store, and nesting too deep to walk. Every walk
 * here is iterative, so a hostile document cannot overflow the stack of the process checking it.
 */
import { InvalidParameter } from './errors.js';

/**
 * Property names that reach `Object.prototype` (or a constructor's) when used as a plain object's
 * key: `obj['__proto__'].x = 1` pollutes every object of the process. Refused as keys and as JSON
 * Patch path tokens anywhere in a request.
 */
export const FORBIDDEN_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

const FORBIDDEN: ReadonlySet<string> = new Set(FORBIDDEN_KEYS);

/** True for a key that must never name a property of an object holding user data. */
export function isForbiddenKey(key: string): boolean {
  return FORBIDDEN.has(key);
}

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why a string cannot be stored, or null when it can. PostgreSQL refuses NUL characters in text and
 * JSON and lone UTF-16 surrogates (they have no UTF-8 encoding); SQLite would store them. Both
 * engines refuse them alike, at the edge.
 */
export function stringProblem(value: string): string | null {
  if (value.includes('\u0000')) return 'contains a NUL character (\\u0000), which cannot be stored';
  if (LONE_SURROGATE.test(value)) return 'contains a lone UTF-16 surrogate (not valid Unicode), which cannot be stored';
  return null;
}

/** Limits on one JSON document. */
export interface JsonLimits {
  /** Deepest nesting of objects and arrays accepted; the document's own object or array is level 1. */
  maxDepth: number;
  /** Where the limit comes from, for the error message (`[api] max_json_depth …`). */
  source?: string;
}

interface Frame {
  value: unknown;
  depth: number;
  parent: Frame | null;
  key: string | number | null;
}

/** `driver_info.list[0].password`, built only when an error needs it. */
function pathOf(frame: Frame, root: string): string {
  const parts: string[] = [];
  for (let f: Frame | null = frame; f !== null && f.key !== null; f = f.parent) {
    parts.push(typeof f.key === 'number' ? `[${f.key}]` : /^[A-Za-z_][A-Za-z0-9_-]*$/.test(f.key) ? `.${f.key}` : `[${JSON.stringify(f.key)}]`);
  }
  const tail = parts.reverse().join('');
  if (root === '') return tail.startsWith('.') ? tail.slice(1) : tail === '' ? 'request body' : tail;
  return `${root}${tail}`;
}

/**
 * Checks a parsed JSON document: no forbidden key, no string (or key) that cannot be stored, and
 * nesting at most `limits.maxDepth`. Throws `InvalidParameter` (400) naming the path of the first
 * problem, prefixed by `root` (the field the document is the value of; empty for a request body).
 */
export function checkJsonDocument(document: unknown, limits: JsonLimits, root = ''): void {
  const stack: Frame[] = [{ value: document, depth: 1, parent: null, key: null }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { value } = frame;
    if (typeof value === 'string') {
      const problem = stringProblem(value);
      if (problem !== null) throw new InvalidParameter(`${pathOf(frame, root)}: ${problem}`);
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (frame.depth > limits.maxDepth) {
      throw new InvalidParameter(`${pathOf(frame, root)}: nested deeper than ${limits.maxDepth} levels of objects and arrays${limits.source ? ` (${limits.source})` : ''}; flatten it`);
    }
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], depth: frame.depth + 1, parent: frame, key: i });
      continue;
    }
    for (const key of Object.keys(value)) {
      const child: Frame = { value: (value as Record<string, unknown>)[key], depth: frame.depth + 1, parent: frame, key };
      if (isForbiddenKey(key)) throw new InvalidParameter(`${pathOf(child, root)}: the key ${JSON.stringify(key)} is not accepted`);
      const problem = stringProblem(key);
      if (problem !== null) throw new InvalidParameter(`${pathOf(frame, root)}: a key ${problem}`);
      stack.push(child);
    }
  }
}

/** Nesting depth of a JSON value (0 for a scalar, 1 for `{}`), iteratively; stops counting past `cap`. */
export function jsonDepth(value: unknown, cap = Number.MAX_SAFE_INTEGER): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > deepest) deepest = depth;
    if (deepest > cap) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return deepest;
}

/**
 * A deep copy of a JSON value whose objects have no prototype, so that no key of it (whatever it
 * is) can reach `Object.prototype` and no inherited name (`toString`) reads as a key. Iterative.
 */
export function cloneJson<T>(value: T): T {
  const copyOf = (v: unknown): unknown => (Array.isArray(v) ? new Array<unknown>(v.length) : typeof v === 'object' && v !== null ? Object.create(null) : v);
  const root = copyOf(value);
  const stack: Array<[source: object, copy: Record<string | number, unknown>]> = [];
  if (root !== value) stack.push([value as object, root as Record<string | number, unknown>]);
  while (stack.length > 0) {
    const [source, copy] = stack.pop()!;
    const entries: Array<[string | number, unknown]> = Array.isArray(source) ? source.map((v, i) => [i, v]) : Object.entries(source);
    for (const [k, v] of entries) {
      const out = copyOf(v);
      // defineProperty, not assignment: even a `__proto__` key already stored stays a plain key.
      Object.defineProperty(copy, k, { value: out, enumerable: true, writable: true, configurable: true });
      if (out !== v) stack.push([v as object, out as Record<string | number, unknown>]);
    }
  }
  return root as T;
}
