/**
 * Errors of node locks (reservations) and node tasks.
 *
 * Each carries the HTTP status the API answers with (through `IronringError`), so routes never pick
 * status codes themselves: a locked node is 409 Conflict, as in Ironic, and a write through the wrong
 * kind of task is a bug in ironring (500), not something a client can fix.
 */
import { IronringError } from '../common/errors.js';

/** Lives with the other shared errors, so `nodes` can throw it without importing `cluster`. */
export { NodeNotFound } from '../common/errors.js';

/**
 * Thrown by `reserveNode` (and so by `acquireTask` for an exclusive task) when another conductor
 * still holds the node's lock after every retry. The client should retry later, as Ironic's
 * `NodeLocked` tells it to.
 */
export class NodeLocked extends IronringError {
  override readonly httpStatus = 409;

  constructor(
    /** Uuid of the locked node. */
    readonly node: string,
    /** Hostname of the conductor holding the lock; null when it was released just as we gave up. */
    readonly holder: string | null,
  ) {
    super(
      holder === null
        ? `node ${node} is locked by another conductor, please retry later`
        : `node ${node} is locked by conductor ${holder}, please retry later`,
    );
  }
}

/**
 * Thrown when a conductor releases, or writes through, a lock it does not hold: the node is
 * unlocked, or locked by someone else — typically because survivors judged this conductor dead and
 * released its locks. The write is refused so that two conductors never both mutate a node.
 */
export class NodeNotLocked extends IronringError {
  override readonly httpStatus = 409;

  constructor(
    /** Uuid (or id, when the node could not be read) of the node. */
    readonly node: string | number,
    /** The conductor that believed it held the lock. */
    readonly host: string,
    /** Who holds the lock now; null when nobody does. */
    readonly holder: string | null,
  ) {
    super(
      `node ${String(node)} is not locked by conductor ${host}` +
        (holder === null ? ' (it is not locked)' : ` (it is locked by conductor ${holder})`),
    );
  }
}

/**
 * Thrown when code tries to mutate a node through a shared (read-only) task. Shared tasks hold no
 * lock, so such a write could race another conductor's exclusive task: a programming error.
 */
export class SharedTaskWrite extends IronringError {
  override readonly httpStatus = 500;
  override readonly userError = false;

  constructor(
    /** Uuid of the node. */
    readonly node: string,
    /** What the task was acquired for, when given. */
    readonly purpose?: string,
  ) {
    super(`cannot modify node ${node} through a shared task${purpose ? ` (${purpose})` : ''}: acquire an exclusive task`);
  }
}

/**
 * Thrown when code writes through a task after releasing it: the lock is gone, so the write would
 * be unprotected. A programming error.
 */
export class TaskReleased extends IronringError {
  override readonly httpStatus = 500;
  override readonly userError = false;

  constructor(
    /** Uuid of the node. */
    readonly node: string,
  ) {
    super(`cannot modify node ${node} through a task that was already released`);
  }
}

/**
 * Thrown when an exclusive task is asked of a conductor that is stopping: it finishes the work it
 * holds but takes no new locks, so that its graceful stop ends. The API answers 503; the caller
 * retries and reaches the node's new owner.
 */
export class ConductorStopping extends IronringError {
  override readonly httpStatus = 503;
  constructor(readonly host: string) {
    super(`conductor ${host} is shutting down and takes no new work; retry to reach the node's new owner`);
  }
}
