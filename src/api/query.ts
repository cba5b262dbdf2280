/** Parsing query parameters the way the Ironic API reads them, with 400s that name the parameter. */
import type { FastifyInstance } from 'fastify';
import { InvalidParameter, NotAcceptable } from '../common/errors.js';
import { stringProblem } from '../common/json-safety.js';

/**
 * Refuses, for every route (Ironic, compute and the rest alike), a query parameter given more than
 * once (`?fields=a&fields=b` would reach the routes as an array, where each expects one string) and
 * a query or path value a database cannot store (NUL, lone surrogates): 400 naming the parameter,
 * before any route reads it. No route accepts a repeated parameter, so none is special-cased.
 */
export function installQueryChecks(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    for (const [name, value] of Object.entries(request.query as Record<string, unknown>)) {
      const shown = JSON.stringify(name);
      const nameProblem = stringProblem(name);
      if (nameProblem !== null) throw new InvalidParameter(`query parameter ${shown}: its name ${nameProblem}`);
      if (Array.isArray(value)) throw new InvalidParameter(`${name}: query parameter given ${value.length} times; give it at most once`);
      const problem = typeof value === 'string' ? stringProblem(value) : null;
      if (problem !== null) throw new InvalidParameter(`${name}: query parameter ${problem}`);
    }
    for (const [name, value] of Object.entries((request.params ?? {}) as Record<string, unknown>)) {
      const problem = typeof value === 'string' ? stringProblem(value) : null;
      if (problem !== null) throw new InvalidParameter(`${name}: path segment ${problem}`);
    }
  });
}

/** `True`/`false`/`1`/`0`/`yes`/`no`/`on`/`off`, case-insensitive; undefined when absent. */
export function parseBool(name: string, raw: string | undefined): boolean | undefined {
  if (raw === undefined) return undefined;
  const v = raw.toLowerCase();
  if (['true', '1', 'yes', 'on', 'y', 't'].includes(v)) return true;
  if (['false', '0', 'no', 'off', 'n', 'f'].includes(v)) return false;
  throw new InvalidParameter(`${name}: expected a boolean, got ${JSON.stringify(raw)}`);
}

/**
 * A comma-separated field list, each one of `valid` (the fields of the requested microversion);
 * undefined when absent. A field of a later microversion (`later`) is 406, as Ironic answers; a
 * field that does not exist at all is 400.
 */
export function parseFields(raw: string | undefined, valid: readonly string[], what: string, later: readonly string[] = []): string[] | undefined {
  if (raw === undefined) return undefined;
  const fields = raw.split(',').map((f) => f.trim()).filter(Boolean);
  for (const f of fields) {
    if (valid.includes(f)) continue;
    if (later.includes(f)) throw new NotAcceptable(`fields: the ${what} field ${JSON.stringify(f)} needs a later API version than the one requested`);
    throw new InvalidParameter(`fields: unknown ${what} field ${JSON.stringify(f)}; valid fields: ${valid.join(', ')}`);
  }
  return fields;
}

/** A list page size: a positive integer, capped at `max`; `max` when absent or 0. */
export function parseLimit(raw: string | undefined, max: number): number {
  if (raw === undefined) return max;
  if (!/^\d+$/.test(raw)) throw new InvalidParameter(`limit: expected a non-negative integer, got ${JSON.stringify(raw)}`);
  const n = Number(raw);
  return n === 0 ? max : Math.min(n, max);
}

export function parseChoice<T extends string>(name: string, raw: string | undefined, choices: readonly T[], fallback: T): T {
  if (raw === undefined) return fallback;
  if ((choices as readonly string[]).includes(raw)) return raw as T;
  throw new InvalidParameter(`${name}: expected one of ${choices.join(', ')}, got ${JSON.stringify(raw)}`);
}
