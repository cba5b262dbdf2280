/** A command that failed on the node: its message is the conductor's `last_error`. */
import { IronringError } from '../common/errors.js';

export class CommandFailed extends IronringError {
  constructor(
    message: string,
    readonly type = 'CommandExecutionError',
  ) {
    super(message);
  }
}
