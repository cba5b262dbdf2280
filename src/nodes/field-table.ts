/**
 * The machinery behind a resource's field table (nodes, ports, and each resource to come): one row
 * per API field says which microversion it appeared in, how the view reads it from a row, and — for
 * fields a client may write — its value schema (TypeBox), whether it is settable on create and
 * changeable by JSON Patch. Create checks, patch application, version gating, views, the columns a
 * view reads and the sort keys are all derived here, so a new field is one row of its table.
 *
 * Pure: rows in, values out, errors as `InvalidParameter` (400) or `NotAcceptable` (406). The API
 * edge and the conductor (which applies a patch again under the node's lock) share it.
 */
import { Type } from 'typebox';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { apiTime } from '../common/api-time.js';
import { InvalidParameter, NotAcceptable } from '../common/errors.js';
import { cloneJson, isForbiddenKey, stringProblem } from '../common/json-safety.js';
import { maskSecrets } from '../common/mask.js';
import { UUID_SCHEMA_PATTERN } from '../common/uuid.js';

/** An API microversion as [major, minor] (the API's `Microversion`). */
export type ApiVersion = readonly [number, number];

export const formatVersion = (v: ApiVersion): string => `${v[0]}.${v[1]}`;
const atLeast = (asked: ApiVersion, since: ApiVersion): boolean => asked[0] - since[0] > 0 || (asked[0] === since[0] && asked[1] >= since[1]);

/** What a client may write into a field, and how it is checked. */
export interface FieldInput {
  /** The accepted values. A schema that takes `null` lets a create leave the field at its default. */
  schema: TSchema;
  /** What the 400 says after `<field or path>: ` when a value fails the schema or `refine`. */
  expected: string | ((value: unknown) => string);
  /** Settable on create; `{ required }` gives the 400 text when it is missing. */
  create?: true | { required: string };
  /** Changeable by JSON Patch. */
  patch?: true;
  /** A JSON object: patch paths may reach inside it (`/driver_info/ipmi_address`). */
  json?: true;
  /** A rule the schema cannot say (a name that is not a UUID); given non-null values only. */
  refine?: (value: unknown) => boolean;
  /** Other spellings accepted and turned into the schema's type first (`"false"` → false). */
  coerce?: (value: unknown) => unknown;
  /** The value stored for an accepted one (UUIDs in lower case). */
  normalize?: (value: unknown) => unknown;
  /** What a patch `remove` leaves (null unless said). */
  removed?: unknown;
  /**
   * The microversion a patch needs to clear the field (remove it, or set it to null) while it holds
   * a value; older requests get 406 (Ironic: 1.25 for a node's `chassis_uuid`).
   */
  clearSince?: ApiVersion;
  /** A value older clients may still send for a newer field without a 406 (Ironic: `''` for conductor_group). */
  empty?: unknown;
  /** Checks one key of a JSON field; `where` names it for the message (`local_link_connection.x`, a patch path). */
  entry?: (where: string, key: string, value: unknown) => void;
}

/** One field of a resource's API shape. */
export interface FieldSpec<Row, Ctx> {
  /** The microversion it appeared in: older requests neither see it nor may write it. */
  since: ApiVersion;
  /** The row column that holds it; absent for a computed field or one shown with a fixed value. */
  column?: keyof Row & string;
  /**
   * How the view reads it: the column as stored (the default), a timestamp, a JSON object with its
   * secrets masked, or a function of the row and the view's context.
   */
  view?: 'time' | 'masked' | ((row: Row, ctx: Ctx) => unknown);
  /** The columns the view needs when it is a function (a list then reads only those). */
  reads?: ReadonlyArray<keyof Row & string>;
  /** Writable fields: how. Read-only fields have none. */
  input?: FieldInput;
  /**
   * False for a column no list may be sorted by; every column that is not JSON and is shown as
   * stored may be by default; true for a column shown through a view that still sorts as stored.
   */
  sortable?: boolean;
}

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: unknown;
}

export interface FieldTableOptions {
  /** The resource's name in messages (`node`, `port`). */
  noun: string;
  /** The 400 for a patch path that names no changeable field; `readOnly` when the field exists. */
  cannotChange: (path: string, readOnly: boolean) => string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The tokens of a JSON pointer, unescaped (`~1` → `/`, `~0` → `~`). */
export function pathTokens(path: string): string[] {
  return path.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

type Renderer<Row, Ctx> = (row: Row, ctx: Ctx) => Record<string, unknown>;
type Getter<Row, Ctx> = ((row: Row, ctx: Ctx) => unknown) & { column?: string };

/** A resource's field table and everything derived from it. */
export class FieldTable<Row, Ctx> {
  private readonly checkers = new Map<string, (value: unknown) => boolean>();
  private readonly getters = new Map<string, Getter<Row, Ctx>>();
  private readonly byVersion = new Map<string, string[]>();
  private readonly renderers = new Map<string, Renderer<Row, Ctx>>();
  private readonly renderersByArray = new WeakMap<readonly string[], Renderer<Row, Ctx>>();
  private jsonFieldNames: readonly string[] | undefined;
  /** The fields a create takes, with their create rule, in table order (read on every create). */
  private readonly creatable: ReadonlyArray<readonly [string, FieldSpec<Row, Ctx>, NonNullable<FieldInput['create']>]>;

  constructor(
    readonly fields: Readonly<Record<string, FieldSpec<Row, Ctx>>>,
    private readonly options: FieldTableOptions,
  ) {
    for (const [name, spec] of Object.entries(fields)) {
      // Refused at import: a row that could never be written, or a view with nothing to read.
      if (spec.input && !spec.input.create && !spec.input.patch) throw new Error(`${options.noun} field ${name}: input that is neither created nor patched`);
      if (spec.input?.json && spec.column === undefined) throw new Error(`${options.noun} field ${name}: a JSON input needs a column`);
      if (spec.view === undefined && spec.column === undefined) throw new Error(`${options.noun} field ${name}: no column and no view`);
      if (spec.input) {
        const compiled = Compile(spec.input.schema);
        this.checkers.set(name, (value) => compiled.Check(value));
      }
      this.getters.set(name, getterOf(spec));
    }
    this.creatable = Object.entries(fields).flatMap(([name, spec]) => (spec.input?.create === undefined ? [] : [[name, spec, spec.input.create] as const]));
  }

  /** The microversion a field appeared in; undefined for no field of this table. */
  since(field: string): ApiVersion | undefined {
    return Object.hasOwn(this.fields, field) ? this.fields[field]!.since : undefined;
  }

  /** The fields a microversion shows, in table order (one array per version, reused). */
  fieldsAt(version: ApiVersion): string[] {
    const key = formatVersion(version);
    let out = this.byVersion.get(key);
    if (out === undefined) {
      out = Object.entries(this.fields).filter(([, spec]) => atLeast(version, spec.since)).map(([name]) => name);
      this.byVersion.set(key, out);
    }
    return out;
  }

  /** Fields a list may be sorted by: those stored in a column of their own that is not JSON. */
  sortKeys(): string[] {
    return Object.entries(this.fields)
      .filter(([name, spec]) => spec.column === name && (spec.sortable === true || (spec.sortable !== false && !spec.input?.json && (spec.view === undefined || spec.view === 'time'))))
      .map(([name]) => name);
  }

  /** Fields whose values are JSON objects a client writes. */
  jsonFields(): readonly string[] {
    this.jsonFieldNames ??= Object.entries(this.fields).filter(([, spec]) => spec.input?.json).map(([name]) => name);
    return this.jsonFieldNames;
  }

  /** The columns needed to render `fields` (plus `always`, e.g. the uuid for links). */
  columnsFor(fields: readonly string[], always: ReadonlyArray<keyof Row & string> = []): Array<keyof Row & string> {
    const columns = new Set<keyof Row & string>(always);
    for (const f of fields) {
      const spec = this.fields[f];
      if (spec === undefined) continue;
      for (const c of spec.reads ?? (spec.column !== undefined && typeof spec.view !== 'function' ? [spec.column] : [])) columns.add(c);
    }
    return [...columns];
  }

  /**
   * The JSON Schema of a create body, for the API's OpenAPI document: every field a create takes,
   * with the version it needs. `create` is what checks bodies, with messages that name the field.
   */
  createSchema(): TSchema {
    const properties: Record<string, TSchema> = {};
    for (const [name, spec] of Object.entries(this.fields)) {
      const create = spec.input?.create;
      if (create === undefined) continue;
      const schema = { ...spec.input!.schema, description: `Since API ${formatVersion(spec.since)}.` } as TSchema;
      properties[name] = create === true ? Type.Optional(schema) : schema;
    }
    return Type.Object(properties, { additionalProperties: false });
  }

  /** Checks one value of a writable field; returns what to store. `where` names it in the message. */
  checkValue(field: string, where: string, raw: unknown): unknown {
    const spec = this.fields[field];
    const input = spec?.input;
    if (input === undefined) throw new InvalidParameter(`${where}: not a writable ${this.options.noun} field`);
    const value = input.coerce ? input.coerce(raw) : raw;
    if (!this.checkers.get(field)!(value) || (value !== null && input.refine !== undefined && !input.refine(value))) {
      throw new InvalidParameter(`${where}: ${typeof input.expected === 'function' ? input.expected(value) : input.expected}`);
    }
    if (input.entry && isObject(value)) for (const [k, v] of Object.entries(value)) input.entry(`${where}.${k}`, k, v);
    return input.normalize ? input.normalize(value) : value;
  }

  /**
   * The values of a create body: every key a field settable on create at `version` (else 400),
   * required ones present, each value checked. A field newer than the version answers 406, as
   * Ironic does, unless its value is one an older client may send (null, or the field's `empty`).
   * A null a field's schema takes leaves the field at its default (absent from the result).
   */
  create(body: unknown, version: ApiVersion): Record<string, unknown> {
    if (!isObject(body)) throw new InvalidParameter('request body: expected a JSON object');
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(body)) {
      const spec = Object.hasOwn(this.fields, key) ? this.fields[key]! : undefined;
      if (!spec?.input?.create) {
        throw new InvalidParameter(`${key}: unknown or read-only field for a new ${this.options.noun} at API version ${formatVersion(version)}`);
      }
    }
    for (const [name, spec, create] of this.creatable) {
      const value = body[name];
      if (value === undefined) {
        if (create !== true) throw new InvalidParameter(`${name}: ${create.required}`);
        continue;
      }
      if (!atLeast(version, spec.since)) {
        if (value === null || value === spec.input!.empty) continue;
        throw new NotAcceptable(`${name}: needs API version ${formatVersion(spec.since)} or later`);
      }
      if (value === null && this.checkers.get(name)!(null)) continue;
      out[name] = this.checkValue(name, name, value);
    }
    return out;
  }

  /**
   * 406 for a patch that touches a field newer than `version`, as Ironic's, or that clears a field
   * holding a value in `current` before its `clearSince` (without `current`, any clearing counts).
   */
  checkPatchVersion(ops: readonly PatchOperation[], version: ApiVersion, current?: Row): void {
    for (const op of ops) {
      const tokens = pathTokens(op.path);
      const spec = Object.hasOwn(this.fields, tokens[0]!) ? this.fields[tokens[0]!]! : undefined;
      if (spec === undefined) continue;
      if (!atLeast(version, spec.since)) throw new NotAcceptable(`${op.path}: needs API version ${formatVersion(spec.since)} or later`);
      const clearSince = spec.input?.clearSince;
      if (clearSince === undefined || tokens.length > 1 || atLeast(version, clearSince)) continue;
      const clears = op.op === 'remove' || op.value === null;
      const held = current === undefined || spec.column === undefined || ((current as Record<string, unknown>)[spec.column] ?? null) !== null;
      if (clears && held) throw new NotAcceptable(`${op.path}: clearing it needs API version ${formatVersion(clearSince)} or later`);
    }
  }

  /**
   * Applies patch operations to a row's current values; returns only the fields they change (JSON
   * fields as whole objects). Reaching inside a JSON field walks nested objects, creating them on
   * `add`; removing or replacing a key that is not there is a 400, as in RFC 6902.
   */
  applyPatch(row: Row, ops: readonly PatchOperation[]): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const op of ops) {
      const tokens = pathTokens(op.path);
      const field = tokens[0]!;
      const spec = Object.hasOwn(this.fields, field) ? this.fields[field]! : undefined;
      const input = spec?.input;
      if (!input?.patch) throw new InvalidParameter(this.options.cannotChange(op.path, spec !== undefined));
      if (input.json) {
        if (tokens.length === 1) {
          out[field] = op.op === 'remove' ? Object.create(null) : cloneJson(this.checkValue(field, op.path, op.value) as Record<string, unknown>);
          continue;
        }
        // Copies without prototypes: the user's keys are data, never properties of Object.
        const current = (out[field] ??= cloneJson(row[spec!.column!] as Record<string, unknown>)) as Record<string, unknown>;
        if (input.entry && tokens.length === 2 && op.op !== 'remove') input.entry(op.path, tokens[1]!, op.value);
        applyInside(current, tokens.slice(1), op);
        if (input.entry && tokens.length > 2) input.entry(op.path, tokens[1]!, current[tokens[1]!]);
        continue;
      }
      if (tokens.length > 1) throw new InvalidParameter(this.options.cannotChange(op.path, false));
      out[field] = this.checkValue(field, op.path, op.op === 'remove' ? (input.removed ?? null) : op.value);
    }
    return out;
  }

  /**
   * Renders a row with the given fields in one object literal: plain columns are read as named
   * properties, the rest through their getters. A detail list renders 1,000 nodes of ~45 fields;
   * looping over the names with keyed reads and writes cost several times more. The names come
   * from the table only (requests' `fields` are checked against it first).
   */
  render(row: Row, ctx: Ctx, fields: readonly string[]): Record<string, unknown> {
    return this.rendererFor(fields)(row, ctx);
  }

  private rendererFor(fields: readonly string[]): Renderer<Row, Ctx> {
    // The same array (a version's fields) comes back for every row: no key to build then.
    const known = this.renderersByArray.get(fields);
    if (known !== undefined) return known;
    const key = fields.join(',');
    let render = this.renderers.get(key);
    if (render === undefined) {
      const getters = fields.map((f) => {
        const getter = this.getters.get(f);
        if (getter === undefined) throw new Error(`no ${this.options.noun} field ${f}`);
        return getter;
      });
      const parts = fields.map((f, i) => {
        const col = getters[i]!.column;
        return `${JSON.stringify(f)}: ${col !== undefined ? `n[${JSON.stringify(col)}]` : `g[${i}](n, ctx)`}`;
      });
      render = new Function('g', `return function render(n, ctx) { return { ${parts.join(', ')} }; };`)(getters) as Renderer<Row, Ctx>;
      this.renderers.set(key, render);
    }
    this.renderersByArray.set(fields, render);
    return render;
  }
}

function getterOf<Row, Ctx>(spec: FieldSpec<Row, Ctx>): Getter<Row, Ctx> {
  const { view, column } = spec;
  const read = (row: Row): unknown => row[column!];
  if (typeof view === 'function') return view;
  if (view === 'time') return (row) => apiTime(read(row) as Date | null);
  if (view === 'masked') return (row) => maskSecrets(read(row) as Record<string, unknown>);
  return Object.assign((row: Row) => read(row), { column: column! });
}

/** True when `key` is the object's own property (never one inherited from a prototype). */
const has = (o: object, key: string): boolean => Object.hasOwn(o, key);

function applyInside(target: Record<string, unknown>, tokens: string[], op: PatchOperation): void {
  let cursor: Record<string, unknown> = target;
  for (const token of tokens.slice(0, -1)) {
    // parsePatch refused prototype names; this is the second lock on the same door.
    if (isForbiddenKey(token)) throw new InvalidParameter(`${op.path}: the key ${JSON.stringify(token)} is not accepted`);
    const next = has(cursor, token) ? cursor[token] : undefined;
    if (!isObject(next)) {
      if (op.op === 'remove') throw new InvalidParameter(`${op.path}: no such key to remove`);
      cursor[token] = Object.create(null) as Record<string, unknown>;
    }
    cursor = cursor[token] as Record<string, unknown>;
  }
  const last = tokens[tokens.length - 1]!;
  if (isForbiddenKey(last)) throw new InvalidParameter(`${op.path}: the key ${JSON.stringify(last)} is not accepted`);
  if (op.op === 'remove') {
    if (!has(cursor, last)) throw new InvalidParameter(`${op.path}: no such key to remove`);
    delete cursor[last];
  } else {
    if (op.op === 'replace' && !has(cursor, last)) throw new InvalidParameter(`${op.path}: no such key to replace (use add)`);
    cursor[last] = cloneJson(op.value);
  }
}

/** Checks a patch document's shape; returns the operations. */
export function parsePatch(body: unknown): PatchOperation[] {
  if (!Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON Patch document (an array of operations)');
  if (body.length === 0) throw new InvalidParameter('request body: the patch has no operations');
  return body.map((raw, i) => {
    if (typeof raw !== 'object' || raw === null) throw new InvalidParameter(`patch[${i}]: expected an object with op and path`);
    const { op, path, value } = raw as Record<string, unknown>;
    if (op !== 'add' && op !== 'replace' && op !== 'remove') {
      throw new InvalidParameter(`patch[${i}].op: ${JSON.stringify(op)} is not supported; use add, replace or remove`);
    }
    if (typeof path !== 'string' || !path.startsWith('/')) throw new InvalidParameter(`patch[${i}].path: expected a JSON pointer such as /name`);
    checkPathTokens(path, i);
    if (op !== 'remove' && value === undefined) throw new InvalidParameter(`patch[${i}].value: required for ${op}`);
    return op === 'remove' ? { op, path } : { op, path, value };
  });
}

/**
 * A token that names a prototype (`/extra/__proto__/x`) would make the walk write into
 * `Object.prototype` of the whole process: refused, like strings a database cannot store.
 */
function checkPathTokens(path: string, index: number): void {
  for (const token of pathTokens(path)) {
    if (isForbiddenKey(token)) throw new InvalidParameter(`patch[${index}].path: ${JSON.stringify(path)} names the key ${JSON.stringify(token)}, which is not accepted`);
    const problem = stringProblem(token);
    if (problem !== null) throw new InvalidParameter(`patch[${index}].path: ${problem}`);
  }
}

/** A client's value as a 400 quotes it: JSON, strings cut to 300 characters. */
export const shownValue = (v: unknown): string => JSON.stringify(typeof v === 'string' ? v.slice(0, 300) : v) ?? String(v);

/**
 * The `uuid` of every resource but the node: a UUID in any case, or null (or absent) for one the
 * store makes; settable on create only; stored in lower case.
 */
export const UUID_INPUT: FieldInput = {
  schema: Type.Union([Type.String({ pattern: UUID_SCHEMA_PATTERN }), Type.Null()]),
  expected: (v) => `expected a UUID, got ${shownValue(v)}`,
  create: true,
  normalize: (v) => (typeof v === 'string' ? v.toLowerCase() : v),
};
