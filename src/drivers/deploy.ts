/** The deploy interface: turns an available node into an active instance, and back. */
import type { CleanStepSource } from './clean-steps.js';
import type { DriverTask } from './task.js';

/**
 * How `deploy` ended: `done` — the instance is in place and the node can go `active`; `wait` — the
 * deploy goes on asynchronously and something will call back (Ironic's `wait call-back`).
 */
export const DEPLOY_OUTCOMES = ['done', 'wait'] as const;
export type DeployOutcome = (typeof DEPLOY_OUTCOMES)[number];

/**
 * `wait`, with keys to merge into `driver_internal_info` with it: a deploy that gave an agent
 * already up its work at once (fast track) records the command in flight, as a heartbeat would.
 */
export interface DeployWait {
  outcome: 'wait';
  internal: Readonly<Record<string, unknown>>;
}

/** Where a node's agent listens, as its last heartbeat said. */
export interface AgentContact {
  /** The agent's command API, `http(s)://host:port` (the heartbeat's `callback_url`). */
  url: string;
  /** The agent's version (`3.0.0` when it sent none, as Ironic assumes). */
  version: string;
}

/**
 * What a heartbeat moved, as the deploy interface reports it to the conductor, which writes it:
 * - `wait` — the agent is still at work (or was just given work); `internal` keys, if any, are
 *   merged into `driver_internal_info` (the command in flight, the deploy step shown);
 * - `resume` — the agent's part is done: the node goes back to `deploying` and the conductor calls
 *   `deploy` again, in the background, to finish (the interface reads from `driver_internal_info`
 *   where it is); from `clean wait`, back to `cleaning`, where the next clean step runs;
 * - `fail` — the deploy (or clean) failed: `deploy failed` (`clean failed`) with `error` as `last_error`.
 */
export type AgentProgress =
  | { kind: 'wait'; internal?: Readonly<Record<string, unknown>> }
  | { kind: 'resume'; internal?: Readonly<Record<string, unknown>> }
  | { kind: 'fail'; error: string };

/** May offer clean steps (`CleanStepSource`): the fake deploy does, the ramdisk deploy offers none. */
export interface DeployInterface extends CleanStepSource {
  /**
   * Checks, without side effects, that the node can be deployed: its instance images and whatever
   * the interfaces deploy relies on (usually boot) need. Throws `InvalidParameterValue`.
   */
  validate(task: DriverTask): Promise<void>;
  /** Gets the node ready for `deploy` (also run before take-over). Idempotent. */
  prepare(task: DriverTask): Promise<void>;
  /** Deploys the instance. The conductor moves the node on according to the outcome. */
  deploy(task: DriverTask): Promise<DeployOutcome | DeployWait>;
  /** Removes the instance: powers the node off and undoes what `deploy` set up. */
  tearDown(task: DriverTask): Promise<void>;
  /** Removes what `prepare` set up (boot files), e.g. after a failed deploy. Idempotent. */
  cleanUp(task: DriverTask): Promise<void>;
  /**
   * Rebuilds, on the conductor that now owns the node, the state its deployment relies on (boot
   * files, DHCP entries) — run when the ring moves a node. Idempotent; writes nothing if current.
   */
  takeOver(task: DriverTask): Promise<void>;
  /**
   * Called by the node's owner, under the node's lock, after it recorded a heartbeat of the agent
   * of a node in `wait call-back` or `clean wait` (token checked, `agent_url` written): where an
   * agent-driven deploy (`direct`) continues its work — asks the agent how its command went (the
   * image write, or the clean step in `driver_internal_info.clean_step_state`), sends the next
   * one — and says what that moved. Interfaces that drive no agent answer `wait`. It must return
   * soon (the agent's heartbeat waits for it): long work is the agent's, or `resume`'s.
   */
  heartbeat(task: DriverTask, agent: AgentContact): Promise<AgentProgress>;
}
