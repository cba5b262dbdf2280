/**
 * Constraint violations of either engine, recognised by the codes the drivers give them — SQLSTATE
 * on PostgreSQL, better-sqlite3's extended result code on SQLite — never by the wording of their
 * messages, which differs between engines and versions. Callers turn a violation into their own
 * domain error (`Conflict`, `DuplicateConductor`…) or retry; anything else passes through.
 */

/** PostgreSQL SQLSTATE and SQLite extended result codes of a unique (or primary key) violation. */
const UNIQUE_CODES: ReadonlySet<string> = new Set(['23505', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

/** A unique violation: which constraint and which columns, as far as the engine says. */
export interface UniqueViolation {
  /** The columns whose values collided, unqualified (`name`, `address`); empty when unknown. */
  readonly columns: readonly string[];
  /** PostgreSQL's constraint name (`nodes_name_key`); null on SQLite, which does not report it. */
  readonly constraint: string | null;
}

interface DriverError {
  code?: unknown;
  message?: unknown;
  detail?: unknown;
  constraint?: unknown;
}

/**
 * The unique violation `err` reports, or null when it is any other error. Columns come from the
 * structured part of the report: PostgreSQL's `detail` (`Key (name)=(n1) already exists.`),
 * SQLite's fixed `UNIQUE constraint failed: <table>.<column>, …` form.
 */
export function uniqueViolation(err: unknown): UniqueViolation | null {
  if (typeof err !== 'object' || err === null) return null;
  const e = err as DriverError;
  if (typeof e.code !== 'string' || !UNIQUE_CODES.has(e.code)) return null;
  if (e.code === '23505') {
    const key = /^Key \((.+?)\)=/.exec(typeof e.detail === 'string' ? e.detail : '');
    return {
      columns: key ? key[1]!.split(',').map((c) => c.trim().replace(/^"|"$/g, '')) : [],
      constraint: typeof e.constraint === 'string' ? e.constraint : null,
    };
  }
  const failed = /constraint failed: (.+)$/.exec(typeof e.message === 'string' ? e.message : '');
  return {
    columns: failed ? failed[1]!.split(',').map((c) => c.trim().replace(/^.*\./, '')) : [],
    constraint: null,
  };
}

/** True when `err` is a unique violation of either engine. */
export function isUniqueViolation(err: unknown): boolean {
  return uniqueViolation(err) !== null;
}

/** PostgreSQL SQLSTATE and SQLite extended result code of a foreign key violation. */
const FOREIGN_KEY_CODES: ReadonlySet<string> = new Set(['23503', 'SQLITE_CONSTRAINT_FOREIGNKEY']);

/**
 * True when `err` is a foreign key violation of either engine: a row naming a parent that is not
 * there, or a parent deleted while rows still name it. Neither engine says which reference in a
 * form both share, so callers know it from the statement they ran.
 */
export function isForeignKeyViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = (err as DriverError).code;
  return typeof code === 'string' && FOREIGN_KEY_CODES.has(code);
}
