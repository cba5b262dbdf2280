/**
 * `--wait` of the node and server commands: poll the API until the node rests — in a stable state
 * with no target, or in a failed state — and say whether that is what was asked for.
 *
 * A failed node keeps its `target_provision_state` (as in Ironic: `deploy failed` still targets
 * `active`), so "rests" is judged by the state and never by the target alone: waiting for the target
 * to clear waited out the whole timeout on a node that had failed within a second.
 */
import { IronringError, UsageError } from '../common/errors.js';
import { FAILURE_STATES, STABLE_STATES } from '../nodes/states.js';
import { apiRequest } from './client.js';
import type { ApiEndpoint } from './client.js';

/** A node as `--wait` reads it. */
export type WaitedNode = Record<string, unknown> & { uuid: string; provision_state: string; target_provision_state?: string | null; last_error?: unknown };

/** Thrown when what was waited for failed (a failed state, or a rest elsewhere); exit code 1. */
export class WaitFailed extends IronringError {
  override readonly exitCode = 1;
}

/** Thrown when what was waited for did not finish in time; exit code 1. */
export class WaitTimedOut extends IronringError {
  override readonly exitCode = 1;
}

/** Failed states: the `* failed` ones and `error`. */
export const FAILED_STATES: ReadonlySet<string> = new Set<string>([...FAILURE_STATES, 'error']);
const STABLE: ReadonlySet<string> = new Set<string>(STABLE_STATES);

/** Whether a node rests: failed (whatever its target), or stable with no target. */
export function nodeRests(node: Pick<WaitedNode, 'provision_state' | 'target_provision_state'>): boolean {
  return FAILED_STATES.has(node.provision_state) || (STABLE.has(node.provision_state) && !node.target_provision_state);
}

/** Text on one line (a multi-line `last_error` would break the one-line error contract). */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/**
 * Why a resting node is a failure for an action that should end in `expected` (`''`: any rest is
 * the action's outcome, as for `abort`), or null when it succeeded. A node back in `enroll` after a
 * `manage` whose BMC check failed is a failure, with its `last_error`.
 */
export function nodeFailure(node: WaitedNode, expected: string): string | null {
  if (expected === '' || node.provision_state === expected) return null;
  const why = typeof node.last_error === 'string' && node.last_error !== '' ? oneLine(node.last_error) : 'no last_error given';
  return `${node.provision_state}${expected ? ` (expected ${expected})` : ''}: ${why}`;
}

/** Parses `--wait [seconds]`: null when absent, `fallback` for a bare flag. */
export function waitSeconds(value: string | boolean | undefined, fallback: number): number | null {
  if (value === undefined || value === false) return null;
  if (value === true) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--wait: expected seconds > 0, got ${JSON.stringify(value)}`);
  return n;
}

/** Milliseconds between polls. */
export const POLL_MS = 250;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls node `ident` until it rests; throws `WaitTimedOut` after `seconds`. */
export async function waitForNode(base: ApiEndpoint, ident: string, seconds: number): Promise<WaitedNode> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const node = await apiRequest<WaitedNode>(base, 'GET', `/v1/nodes/${encodeURIComponent(ident)}`);
    if (nodeRests(node)) return node;
    if (Date.now() > deadline) throw new WaitTimedOut(`node ${ident} did not finish within ${seconds} s (now ${node.provision_state})`);
    await sleep(POLL_MS);
  }
}
