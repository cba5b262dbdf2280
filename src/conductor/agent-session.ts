/**
 * The owner's side of a node's agent session: registering the agent token at the node's first
 * lookup, recording heartbeats, and ending the session when the node leaves the agent states.
 *
 * The API generates the token and sends only its digest here (src/agent/agent-token.ts), so the
 * token in clear never crosses the RPC wire; a heartbeat's token arrives as a digest too, and is
 * compared in constant time. A wrong token is refused from a plain read, without taking the node's
 * lock, so that a caller guessing tokens cannot keep the owner's own work off the node.
 */
import { agentTokenMatches } from '../agent/agent-token.js';
import { LOOKUP_NOT_FOUND } from '../agent/protocol.js';
import { acquireTask, withTask } from '../cluster/task.js';
import type { AcquireOptions, NodePatch, NodeTask } from '../cluster/task.js';
import { InvalidParameter, NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import type { AgentContact, AgentProgress, DriverTask } from '../drivers/index.js';
import type { NodeRow } from '../nodes/node-store.js';
import { expectsAgent, transition } from '../nodes/state-machine.js';
import { withoutCleanBookkeeping } from './cleaning.js';
import type { ProvisionStatus } from '../nodes/state-machine.js';
import type { ProvisionState, StableState } from '../nodes/states.js';

/**
 * The `driver_internal_info` keys of an agent session that end with it, as Ironic's
 * `wipe_token_and_url` drops them: the next agent says its URL afresh; and where the session's
 * deploy was (`direct_deploy`, `deploy_step`), so the next deploy starts from the beginning.
 * `agent_version` and `agent_last_heartbeat` stay, as in Ironic (fast-track reads the last heartbeat).
 */
export const AGENT_SESSION_KEYS = ['agent_url', 'agent_verify_ca', 'direct_deploy', 'deploy_step'] as const;

/** Ironic's refusal of a heartbeat whose token is wrong or absent (400, as its InvalidParameterValue). */
export const INVALID_AGENT_TOKEN = 'Invalid or missing agent token received.';


/**
 * `patch` — a write that sets `provision_state` — with the end of the agent session added when the
 * new state expects no agent: the token digest cleared and the session's keys dropped from
 * `driver_internal_info` (the patch's own, else the node's). Every write of a provision state goes
 * through this, so no token outlives the states it was issued for — but for `keepAgent`: fast
 * track leaves the agent running past the end of a clean, for the next verb to use (as Ironic
 * keeps the token then); powering the node off ends that session (`endAgentSession`).
 */
export function withAgentSession(node: Pick<NodeRow, 'driver_internal_info' | 'agent_token_hash'>, patch: NodePatch & { provision_state: string }, keepAgent = false): NodePatch {
  if (keepAgent || expectsAgent(patch.provision_state)) return patch;
  const end = endAgentSession(node, patch.driver_internal_info);
  return { ...patch, ...end, ...(patch.agent_token_hash !== undefined ? { agent_token_hash: null } : {}) };
}

/**
 * The writes that end a node's agent session whatever its state (the token digest cleared, the
 * session's keys dropped from `internal`, default the node's): nothing when there is none.
 */
export function endAgentSession(node: Pick<NodeRow, 'driver_internal_info' | 'agent_token_hash'>, internal = node.driver_internal_info): NodePatch {
  const patch: NodePatch = {};
  const stale = AGENT_SESSION_KEYS.filter((k) => Object.hasOwn(internal, k));
  if (node.agent_token_hash !== null) patch.agent_token_hash = null;
  if (stale.length > 0) patch.driver_internal_info = Object.fromEntries(Object.entries(internal).filter(([k]) => !(stale as readonly string[]).includes(k)));
  return patch;
}

/** What the owner needs from its node operations to run the session. */
export interface AgentSessionDeps {
  store: Store;
  /** How to take the node's exclusive lock (host, tracker, retries). */
  lockOptions: (purpose: string) => AcquireOptions;
  /** The driver's view of a locked node, for the deploy interface's heartbeat hook. */
  driverTask: (task: NodeTask) => Promise<DriverTask>;
  /**
   * Goes on with a node a heartbeat moved back to a working state (`deploying`), in the
   * background; takes the task's lock over and releases it when done.
   */
  resume: (task: NodeTask) => void;
}

/**
 * Stores `tokenHash` as the node's agent token when it has none and is in an agent state; answers
 * whether it did (false: a token was issued before, and the lookup answers `******`). A node in a
 * state that expects no agent → `NotFound`, as the lookup answers it. Checked again under the lock,
 * so two lookups at once issue one token.
 */
export async function registerAgentToken(deps: AgentSessionDeps, uuid: string, tokenHash: string): Promise<{ issued: boolean }> {
  // Repeated lookups (an agent retrying, or anyone who knows a MAC) are answered from a plain read:
  // only the one that issues the token takes the node's lock.
  const read = await acquireTask(deps.store, uuid, { host: '', shared: true });
  if (!expectsAgent(read.node.provision_state)) throw new NotFound(LOOKUP_NOT_FOUND);
  if (read.node.agent_token_hash !== null) return { issued: false };
  return withTask(deps.store, uuid, deps.lockOptions('agent token'), async (task) => {
    if (!expectsAgent(task.node.provision_state)) throw new NotFound(LOOKUP_NOT_FOUND);
    if (task.node.agent_token_hash !== null) return { issued: false };
    await task.update({ agent_token_hash: tokenHash });
    return { issued: true };
  });
}

/** The states in which a heartbeat moves the node's work on: a deploy's, a clean's or a rescue's, waiting for the agent. */
const AGENT_WAIT_STATES: ReadonlySet<string> = new Set(['wait call-back', 'clean wait', 'rescue wait']);

/** A heartbeat as the API passes it on: the token as its digest, the fields already checked. */
export interface HeartbeatRecord {
  tokenHash: string;
  callbackUrl: string;
  agentVersion: string;
}

/**
 * Records a heartbeat: checks the token (400 `INVALID_AGENT_TOKEN` when wrong, before any lock),
 * then under the node's lock checks it again, refuses a callback URL other than the one recorded
 * (an agent's URL does not change within its session, as Ironic refuses it), writes `agent_url`,
 * `agent_version` and `agent_last_heartbeat` (the database clock) into `driver_internal_info`.
 * A node in `wait call-back` or `clean wait` then hands the heartbeat to its deploy interface
 * (`DeployInterface.heartbeat`), one in `rescue wait` to its rescue interface, and the conductor writes what that moved: merged
 * `driver_internal_info`, `deploy failed` or `clean failed` with `last_error` (the node powered
 * off), or back to `deploying` or `cleaning`, whose work `deps.resume` takes over with the lock
 * still held (it releases it). In any other state (fast track: an agent left up after cleaning)
 * the heartbeat is only recorded.
 */
export async function recordHeartbeat(deps: AgentSessionDeps, uuid: string, heartbeat: HeartbeatRecord): Promise<void> {
  const read = await acquireTask(deps.store, uuid, { host: '', shared: true });
  if (!agentTokenMatches(heartbeat.tokenHash, read.node.agent_token_hash)) throw new InvalidParameter(INVALID_AGENT_TOKEN);
  const task = await acquireTask(deps.store, uuid, deps.lockOptions('heartbeat'));
  let handedOver = false;
  try {
    // The token may have been wiped or replaced between the read and the lock.
    if (!agentTokenMatches(heartbeat.tokenHash, task.node.agent_token_hash)) throw new InvalidParameter(INVALID_AGENT_TOKEN);
    const internal = task.node.driver_internal_info;
    const known = internal.agent_url;
    if (typeof known === 'string' && known !== heartbeat.callbackUrl) {
      throw new InvalidParameter(`callback_url: differs from the one this agent gave before (${known}); an agent's URL does not change while it runs`);
    }
    const now = await deps.store.now();
    await task.update({
      driver_internal_info: { ...internal, agent_url: heartbeat.callbackUrl, agent_version: heartbeat.agentVersion, agent_last_heartbeat: now.toISOString() },
    });
    if (!AGENT_WAIT_STATES.has(task.node.provision_state)) return;
    const driverTask = await deps.driverTask(task);
    const contact: AgentContact = { url: heartbeat.callbackUrl, version: heartbeat.agentVersion };
    // A rescue's heartbeat is the rescue interface's; the others, the deploy interface's.
    const { rescue, deploy } = driverTask.driver;
    let progress = task.node.provision_state === 'rescue wait' ? ((await rescue.heartbeat?.(driverTask, contact)) ?? { kind: 'wait' }) : await deploy.heartbeat(driverTask, contact);
    let changes: NodePatch = {};
    if (progress.kind === 'fail') {
      // As Ironic's [deploy] power_off_after_deploy_failure and its tear-down of a failed clean: a
      // failed node does not stay up running the deploy ramdisk. The failure stands whatever the BMC says.
      try {
        await driverTask.driver.power.setPowerState(driverTask, 'power off');
        changes = { power_state: 'power off' };
      } catch (err) {
        progress = { kind: 'fail', error: `${progress.error}; powering the node off failed too: ${(err as Error).message}` };
      }
    }
    handedOver = await applyProgress(deps, task, progress, changes);
  } finally {
    if (!handedOver) await task.release();
  }
}

/** Writes what a deploy heartbeat moved; true when the task went to `deps.resume`. */
async function applyProgress(deps: AgentSessionDeps, task: NodeTask, progress: AgentProgress, changes: NodePatch): Promise<boolean> {
  const status: ProvisionStatus = { state: task.node.provision_state as ProvisionState, target: task.node.target_provision_state as StableState | null };
  const internal = progress.kind === 'fail' || progress.internal === undefined ? undefined : { ...task.node.driver_internal_info, ...progress.internal };
  switch (progress.kind) {
    case 'wait':
      if (internal !== undefined) await task.update({ driver_internal_info: internal });
      return false;
    case 'fail': {
      const next = transition(status, 'fail');
      // A failed clean keeps the steps it had, not where it was in them.
      const { clean_steps: steps } = task.node.driver_internal_info;
      const cleanEnds = status.state === 'clean wait' ? { driver_internal_info: { ...withoutCleanBookkeeping(task.node.driver_internal_info), ...(steps !== undefined ? { clean_steps: steps } : {}) } } : {};
      await task.update(withAgentSession(task.node, { ...changes, ...cleanEnds, provision_state: next.state, target_provision_state: next.target, provision_updated_at: new Date(), last_error: progress.error }));
      await task.recordHistory({ eventType: 'provisioning', severity: 'ERROR', event: `${status.state} → ${next.state}: ${progress.error}` });
      return false;
    }
    case 'resume': {
      const next = transition(status, 'resume');
      await task.update({ ...(internal !== undefined ? { driver_internal_info: internal } : {}), provision_state: next.state, target_provision_state: next.target, provision_updated_at: new Date() });
      await task.recordHistory({ eventType: 'provisioning', severity: 'INFO', event: `${status.state} → ${next.state}: the agent finished its part` });
      deps.resume(task);
      return true;
    }
  }
}
