/**
 * The ring's own errors.
 *
 * The ring imports nothing else of ironring (it is published on its own as `ironring/ring`), so
 * these classes do not extend the shared `IronringError`; they carry the same `httpStatus` field so
 * that the API's generic error handler can map them without knowing the ring.
 */

/** Base class of every error the ring throws; `httpStatus` is what the API answers with. */
export class RingError extends Error {
  /** HTTP status the API maps this error to. */
  readonly httpStatus: number = 400;

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Thrown when a ring would have no hosts: built from an empty list, or asked to remove its last
 * host. Nobody can own anything, so the API answers 503 (no live conductor) rather than 400.
 */
export class NoHostsError extends RingError {
  override readonly httpStatus = 503;

  constructor(message = 'the hash ring has no hosts') {
    super(message);
  }
}

/** Thrown when the same host name is given twice (in one list, or added while already present). */
export class DuplicateHostError extends RingError {
  constructor(
    /** The repeated host name. */
    readonly host: string,
  ) {
    super(`duplicate host ${JSON.stringify(host)} in the hash ring`);
  }
}

/** Thrown when a host is not a non-empty string name (or `{ name }` object with one). */
export class InvalidHostError extends RingError {
  constructor(
    /** The offending value, as given. */
    readonly value: unknown,
  ) {
    super(`invalid host ${describe(value)}: expected a non-empty string or { name, weight? }`);
  }
}

/** Thrown when a host's weight is not an integer ≥ 1 (or is beyond the ring's maximum). */
export class InvalidWeightError extends RingError {
  constructor(
    /** The host the weight was given for. */
    readonly host: string,
    /** The offending weight, as given. */
    readonly weight: unknown,
    expected = 'an integer ≥ 1',
  ) {
    super(`invalid weight ${describe(weight)} for host ${JSON.stringify(host)}: expected ${expected}`);
  }
}

/** Thrown when a lookup asks for a replica count that is not an integer ≥ 1. */
export class InvalidReplicasError extends RingError {
  constructor(
    /** The offending replica count, as given. */
    readonly replicas: unknown,
  ) {
    super(`invalid replicas ${describe(replicas)}: expected an integer ≥ 1`);
  }
}

/** Thrown when a ring option (`mode`, `partitions`) has a value the ring does not accept. */
export class InvalidRingOptionError extends RingError {
  constructor(
    /** The option's name. */
    readonly option: string,
    /** The offending value, as given. */
    readonly value: unknown,
    expected: string,
  ) {
    super(`invalid ${option} ${describe(value)}: expected ${expected}`);
  }
}

/** Thrown when removing (or weighing) a host the ring does not hold. */
export class UnknownHostError extends RingError {
  constructor(
    /** The host name that is not in the ring. */
    readonly host: string,
  ) {
    super(`unknown host ${JSON.stringify(host)}: not in the hash ring`);
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return String(value);
  }
  if (value === undefined) return 'undefined';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
