/**
 * The error vocabulary shared by every part of ironring.
 *
 * Each error has a stable `name`, the HTTP status the API answers it with and the exit code the CLI
 * leaves with, so that the API has one generic error handler and the CLI one generic catch — no
 * status codes or exit codes scattered through routes and commands.
 */
export class IronringError extends Error {
  /** HTTP status the API maps this error to. */
  readonly httpStatus: number = 500;
  /** Process exit code the CLI leaves with. */
  readonly exitCode: number = 1;
  /** True when the error is the user's to fix (bad input, bad config); the CLI prints no stack. */
  readonly userError: boolean = true;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Thrown when a command line is wrong: unknown flag value, missing argument. Exit code 2. */
export class UsageError extends IronringError {
  override readonly httpStatus = 400;
  override readonly exitCode = 2;
}

/**
 * Thrown when the configuration (file, environment or flags) does not parse or does not validate.
 * The message names the source, the key and the expected type. Exit code 2, nothing is started.
 */
export class ConfigError extends IronringError {
  override readonly exitCode = 2;
  constructor(
    message: string,
    /** Where the bad value came from: a file path, `environment` or `command line`. */
    readonly source?: string,
    /** `section.key` of the offending option, when there is one. */
    readonly key?: string,
  ) {
    super(message);
  }
}

/** Thrown when a database URL is malformed or names an unsupported engine. */
export class DatabaseUrlError extends IronringError {
  override readonly exitCode = 1;
}

/** Thrown when the database cannot be reached or refuses us. The message masks the password. */
export class DatabaseUnavailable extends IronringError {
  override readonly httpStatus = 503;
  override readonly exitCode = 1;
}

/** Thrown when a server cannot bind its address (in use, not permitted). */
export class ListenError extends IronringError {
  override readonly exitCode = 1;
}

/** Thrown for a request naming something that does not exist. */
export class NotFound extends IronringError {
  override readonly httpStatus = 404;
}

/** Thrown when a node named by id, uuid or name does not exist (or was deleted meanwhile). */
export class NodeNotFound extends NotFound {
  constructor(
    /** The node as it was asked for: id, uuid or name. */
    readonly node: string | number,
  ) {
    super(`node ${String(node)} could not be found`);
  }
}

/** Thrown for a request whose content is invalid; the message names the field. */
export class InvalidParameter extends IronringError {
  override readonly httpStatus = 400;
}

/** Thrown when a request asks for an API microversion outside the supported range. */
export class NotAcceptable extends IronringError {
  override readonly httpStatus = 406;
}

/** Thrown for a method a resource does not take (at the requested microversion). */
export class MethodNotAllowed extends IronringError {
  override readonly httpStatus = 405;
}

/** Narrows an unknown thrown value to an Error. */
export function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/** Thrown when a request would break a uniqueness rule (duplicate name, MAC address…). */
export class Conflict extends IronringError {
  override readonly httpStatus = 409;
}

/** Thrown when no live conductor can take a node's work (its group has none alive). */
export class NoLiveConductor extends IronringError {
  override readonly httpStatus = 503;
}
