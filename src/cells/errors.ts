/**
 * Errors of the cell and host-mapping operations. Exit codes follow `nova-manage cell_v2`, so a
 * script written against Nova's exit codes keeps working (REFERENCE.md, "Nova host discovery").
 */
import { Conflict, InvalidParameter, NotFound } from '../common/errors.js';

/** Thrown when no cell has the given name or uuid. Exit code 1, as Nova's "Cell with uuid … was not found". */
export class CellNotFound extends NotFound {
  override readonly exitCode = 1;
  constructor(readonly cell: string) {
    super(`cell ${JSON.stringify(cell)} not found (by name or uuid); \`ironring manage cell list\` shows the cells`);
  }
}

/**
 * Thrown when a cell would duplicate another's name, uuid or database. Exit code 2, as Nova's
 * `create_cell` when a cell already uses that database connection.
 */
export class CellExists extends Conflict {
  override readonly exitCode = 2;
}

/** Thrown when a cell name, uuid or database URL is malformed. Exit code 1. */
export class InvalidCell extends InvalidParameter {
  override readonly exitCode = 1;
}

/** Thrown when `delete` finds hosts mapped to the cell and `--force` was not given. Exit code 2, as Nova. */
export class CellHasHosts extends Conflict {
  override readonly exitCode = 2;
}

/** Thrown when `delete` finds instances in the cell. Exit code 3, as Nova. */
export class CellHasInstances extends Conflict {
  override readonly exitCode = 3;
}

/**
 * Thrown when `delete` finds instance mappings whose instances are gone and `--force` was not
 * given. Exit code 4, as Nova.
 */
export class CellHasInstanceMappings extends Conflict {
  override readonly exitCode = 4;
}

/** Thrown when no host mapping exists for a host. Exit code 2, as Nova's `delete_host`. */
export class HostMappingNotFound extends NotFound {
  override readonly exitCode = 2;
  constructor(readonly host: string) {
    super(`host ${JSON.stringify(host)} is not mapped to any cell`);
  }
}

/** Thrown when a host is mapped to another cell than the one named. Exit code 3, as Nova's `delete_host`. */
export class HostInOtherCell extends Conflict {
  override readonly exitCode = 3;
}

/** Thrown when `delete-host` finds instances on the host. Exit code 4, as Nova's `delete_host`. */
export class HostHasInstances extends Conflict {
  override readonly exitCode = 4;
}
