/**
 * The agent's command results as IPA shapes them — what Ironic's conductor (and ironring's) read
 * from `POST /v1/commands/` and `GET /v1/commands/`: the result of a method, its failure, its
 * parameters as echoed back, and what a reader without the agent token may see.
 */
import { IronringError } from '../common/errors.js';
import { CommandFailed } from './agent-commands.js';
import type { AgentCommandError, AgentCommandResult } from './protocol.js';

/** A command the agent ran or runs, and when it ends. */
export interface StoredCommand extends AgentCommandResult {
  done: Promise<void>;
}

/**
 * A command's `command_result` as IPA shapes it (and Ironic reads it): a string is wrapped as
 * `{result}` — an asynchronous command's prefixed with the method's name — and anything else
 * (`get_deploy_steps`' steps, `collect_system_logs`' archive) is the result itself; nothing is null.
 */
export function commandResult(name: string, async: boolean, result: unknown): Record<string, unknown> | null {
  if (typeof result === 'string') return { result: async ? `${name}: ${result}` : result };
  if (result === undefined || result === null) return null;
  return result as Record<string, unknown>;
}

export function view(command: StoredCommand): AgentCommandResult {
  const { done: _done, ...rest } = command;
  return rest;
}

/**
 * A command's result as a reader without the token sees it: status, error and result, which is
 * all Ironic's conductor reads when it polls; no parameters (image URLs, step arguments) and no
 * collected system logs.
 */
export function publicView(command: StoredCommand): AgentCommandResult {
  const shown = view(command);
  return { ...shown, command_params: {}, command_result: command.command_name === 'collect_system_logs' ? null : shown.command_result };
}

/** The params as results show them: a config drive or a password is not echoed back. */
export function redact(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(params)) {
    if (key === '__proto__') continue;
    out[key] = /configdrive|password|secret|token/i.test(key) && value !== null && value !== undefined ? '***' : value;
  }
  return out;
}

/** A failure as IPA serialises it in `command_error`. */
export function serialise(err: unknown): AgentCommandError {
  const error = err instanceof Error ? err : new Error(String(err));
  const type = error instanceof CommandFailed ? error.type : error.constructor.name === 'Error' ? 'CommandExecutionError' : error.constructor.name;
  const code = error instanceof IronringError ? error.httpStatus : 500;
  return { type, code, message: error.message.slice(0, 16 * 1024), details: '' };
}
