/**
 * What a conductor does to a node on request: update (JSON Patch), delete, provision actions, power,
 * boot device, maintenance. Every change holds the node's lock through one task; long work (deploy,
 * clean, power changes) runs in the background after the request is accepted, as in Ironic, and the
 * lock is held until it ends.
 */
import type { Logger } from '../common/logger.js';
import { Conflict, InvalidParameter } from '../common/errors.js';
import { NodeLocked } from '../cluster/errors.js';
import { acquireTask, withTask } from '../cluster/task.js';
import type { NodePatch, NodeTask, TaskTracker } from '../cluster/task.js';
import type { Store } from '../db/connect.js';
import { uniqueViolation } from '../db/errors.js';
import type { DriverRegistry } from '../drivers/index.js';
import { BOOT_DEVICES, PowerActionFailed, RESCUE_FINALIZED_KEY, RESCUE_PASSWORD_KEY, validateCleanSteps } from '../drivers/index.js';
import type { BootDevice, CleanStepRequest, DriverPort, DriverTask, PowerState } from '../drivers/index.js';
import { applyNodePatch } from '../nodes/node-patch.js';
import type { PatchOperation } from '../nodes/node-patch.js';
import type { NodeRow } from '../nodes/node-store.js';
import { applyAction, bootNeed, expectsAgent, stateKind, transition } from '../nodes/state-machine.js';
import type { ProvisionStatus } from '../nodes/state-machine.js';
import { isPowerAction, WORKING_STATES } from '../nodes/states.js';
import type { ProvisionAction, ProvisionState, StableState } from '../nodes/states.js';
import { abortCleaning, clean, withoutCleanBookkeeping } from './cleaning.js';
import { DEFAULT_INSPECTOR_SETTINGS, finishInspection } from './inspection.js';
import type { InspectorSettings } from './inspection.js';
import { agentTokenMatches } from '../agent/agent-token.js';
import type { InspectionData } from '../agent/inspection-data.js';
import { failStrandedWork, resumeEvent, whyNotResume } from './stranded-work.js';
import { endAgentSession, INVALID_AGENT_TOKEN, recordHeartbeat, registerAgentToken, withAgentSession } from './agent-session.js';
import type { AgentSessionDeps, HeartbeatRecord } from './agent-session.js';

/** The events a conductor fires when a state's work ends. */
type StepEvent = 'done' | 'wait' | 'fail' | 'manage' | 'clean';

/** What the work of one state ended with: the event to fire and what to write with it. */
interface StepResult {
  event: StepEvent | null;
  /** Columns written together with the new state (power state read back, instance fields wiped…). */
  changes?: NodePatch;
  /** The node's agent stays up past the new state (fast track): its session is kept. */
  keepAgent?: boolean;
}

/** Options of a provision action as the API passes them on. */
export interface ProvisionOptions {
  configdrive?: unknown;
  /** The steps of a manual clean (`clean`), already shaped by `parseCleanSteps`. */
  cleanSteps?: readonly CleanStepRequest[];
  /** `rescue`: the crypt hash of the rescue password (the API hashed it). */
  rescuePasswordHash?: string;
}

/** Provision states from which a node may be deleted (Ironic's rule). */
export const DELETE_ALLOWED_STATES: readonly string[] = ['available', 'manageable', 'enroll', 'adopt failed'];

export interface NodeOperationsDeps {
  store: Store;
  host: string;
  tracker: TaskTracker;
  drivers: DriverRegistry;
  logger: Logger;
  retry: { attempts: number; intervalMs: number };
  /**
   * `[conductor] automated_clean`: whether automated cleaning runs the interfaces' steps with a
   * priority above 0 (default true, as Ironic's); false: it runs none and says so.
   */
  automatedClean?: boolean;
  /** `[inspector]`: ports and local_gb from an inspection's inventory. Default Ironic's. */
  inspector?: InspectorSettings;
  /** This conductor's row id, for `conductor_affinity` when its work leaves boot files here. */
  conductorId?: () => number | undefined;
  /**
   * Told when work left a node resting on boot files made here, as of the release that said so
   * (`conductor_affinity` set, the row's stamp then, the ports the files were made for): the
   * reconciler then knows them current and does not take over its own node again.
   */
  bootStateMade?: (uuid: string, stamp: string, ports: readonly DriverPort[]) => void;
}

/**
 * True when a node that comes to rest in `state` boots from the files its work left on this
 * conductor (a working state is not a rest: the next step decides).
 */
const restsOnOwnBootFiles = (state: ProvisionState): boolean => stateKind(state) !== 'working' && bootNeed(state) !== 'none';
const RESUMABLE_STATES: ReadonlySet<string> = new Set(WORKING_STATES);


export class NodeOperations {
  /** Background work in flight, so tests and shutdown can wait for it. */
  readonly running = new Set<Promise<void>>();

  constructor(private readonly deps: NodeOperationsDeps) {}

  private lock(uuid: string, purpose: string, retry = this.deps.retry): Promise<NodeTask> {
    const { store, host, tracker } = this.deps;
    return acquireTask(store, uuid, { host, tracker, purpose, retry });
  }

  /**
   * Takes over a working state (deploying, cleaning, deleting, verifying…) whose conductor went
   * away: resumes it where that is safe, instead of failing it as Ironic does, and otherwise fails it
   * to its failure state with `last_error` (maintenance, or interrupted again after a resume: see
   * `stranded-work.ts`). Null when the node is locked (someone is on it) or no longer in a working
   * state.
   */
  async resume(uuid: string): Promise<'resumed' | 'failed' | null> {
    let task: NodeTask;
    try {
      task = await this.lock(uuid, 'resume', { attempts: 1, intervalMs: 0 });
    } catch (err) {
      if (err instanceof NodeLocked) return null;
      throw err;
    }
    const state = task.node.provision_state;
    if (!RESUMABLE_STATES.has(state)) {
      await task.release();
      return null;
    }
    try {
      const why = await whyNotResume(this.deps.store, task.node);
      if (why !== null) {
        const to = await failStrandedWork(task, this.deps.host, why);
        this.deps.logger.warn({ node: uuid, state, to, why }, 'failed the work of a departed conductor instead of resuming it');
        return 'failed';
      }
      await task.recordHistory({ eventType: 'provisioning', severity: 'WARNING', event: resumeEvent(state, this.deps.host) });
    } catch (err) {
      await task.release();
      throw err;
    }
    this.deps.logger.warn({ node: uuid, state }, 'resuming the work of a departed conductor');
    this.background(task, () => this.drive(task));
    return 'resumed';
  }

  private background(task: NodeTask, work: () => Promise<void>): void {
    const run = work()
      .catch((err: unknown) => this.deps.logger.error({ node: task.node.uuid, err: (err as Error).message }, 'background node work failed'))
      .finally(() => task.release().catch(() => undefined));
    const tracked = run.then(() => undefined);
    this.running.add(tracked);
    void tracked.finally(() => this.running.delete(tracked));
  }

  private async ports(nodeId: number) {
    const rows = await this.deps.store.db.selectFrom('ports').select(['address', 'pxe_enabled']).where('node_id', '=', nodeId).orderBy('id').execute();
    return rows.map((p) => ({ address: p.address, pxeEnabled: p.pxe_enabled }));
  }

  private async driverTask(task: NodeTask) {
    return this.deps.drivers.bind({
      node: task.node,
      ports: await this.ports(task.node.id),
      logger: this.deps.logger.child({ node: task.node.uuid }),
      agentToken: task.node.agent_token_hash,
      forgetAgent: async () => {
        const end = endAgentSession(task.node);
        if (Object.keys(end).length > 0) await task.update(end);
      },
    });
  }

  /** Applies a JSON Patch; returns the updated node. */
  async update(uuid: string, ops: readonly PatchOperation[]): Promise<NodeRow> {
    return withTask(this.deps.store, uuid, { host: this.deps.host, tracker: this.deps.tracker, purpose: 'update', retry: this.deps.retry }, async (task) => {
      const changes = applyNodePatch(task.node, ops);
      const driver = changes.driver ?? task.node.driver;
      const requested: Record<string, string | null | undefined> = {};
      for (const [key, value] of Object.entries(task.node)) if (key.endsWith('_interface')) requested[key] = value as string | null;
      for (const [key, value] of Object.entries(changes)) if (key.endsWith('_interface')) requested[key] = value as string | null;
      // A new driver resets the interfaces it does not offer to its defaults, as Ironic does.
      const resolved = changes.driver !== undefined && changes.driver !== task.node.driver
        ? this.deps.drivers.validateInterfaces(driver, Object.fromEntries(Object.entries(changes).filter(([k]) => k.endsWith('_interface'))) as Record<string, string | null>)
        : this.deps.drivers.validateInterfaces(driver, requested);
      if (changes.instance_uuid !== undefined && task.node.instance_uuid !== null && changes.instance_uuid !== null && changes.instance_uuid !== task.node.instance_uuid) {
        throw new Conflict(`node ${task.node.uuid} is already associated with instance ${task.node.instance_uuid}`);
      }
      try {
        return await task.update({ ...changes, ...resolved } as NodePatch);
      } catch (err) {
        const violation = uniqueViolation(err);
        if (violation) {
          if (violation.columns.includes('name')) throw new Conflict(`a node named ${JSON.stringify(changes.name)} already exists`);
          throw new Conflict(`instance ${changes.instance_uuid} is already associated with another node`);
        }
        throw err;
      }
    });
  }

  /** Deletes a node in a deletable state. */
  async destroy(uuid: string): Promise<void> {
    await withTask(this.deps.store, uuid, { host: this.deps.host, tracker: this.deps.tracker, purpose: 'delete', retry: this.deps.retry }, async (task) => {
      const { node } = task;
      if (node.instance_uuid !== null) throw new Conflict(`node ${node.uuid} is associated with instance ${node.instance_uuid}; undeploy it first`);
      if (!DELETE_ALLOWED_STATES.includes(node.provision_state)) {
        throw new Conflict(`node ${node.uuid} cannot be deleted in provision state "${node.provision_state}"; allowed in: ${DELETE_ALLOWED_STATES.join(', ')}`);
      }
      await this.deps.store.db.deleteFrom('nodes').where('id', '=', node.id).where('reservation', '=', this.deps.host).execute();
    });
  }

  /**
   * Starts a provision action; resolves once the node is in its first intermediate state. Refuses
   * (400, nothing written) an action the node's interfaces cannot perform: `no-inspect`,
   * `no-rescue`, clean steps no interface offers (see `checkSupported`).
   */
  async provision(uuid: string, action: ProvisionAction, options: ProvisionOptions = {}): Promise<void> {
    const task = await this.lock(uuid, `provision ${action}`);
    let abortsCleaning = false;
    let abortsInspection = false;
    let abortsRescue = false;
    try {
      const status: ProvisionStatus = { state: task.node.provision_state as ProvisionState, target: task.node.target_provision_state as StableState | null };
      const next = applyAction(status, action);
      // A clean starts afresh: what an earlier one left (a failed one's step index) must not be
      // taken for a clean coming back from `clean wait`.
      const internal = (await this.checkSupported(task, next.event, options.cleanSteps)) ?? (next.state === 'cleaning' ? withoutCleanBookkeeping(task.node.driver_internal_info) : undefined);
      let instanceInfo: Record<string, unknown> | undefined = options.configdrive !== undefined ? { ...task.node.instance_info, configdrive: options.configdrive } : undefined;
      // Kept where Ironic keeps it, until the agent has set it (never the password in clear).
      if (options.rescuePasswordHash !== undefined) instanceInfo = { ...task.node.instance_info, [RESCUE_PASSWORD_KEY]: options.rescuePasswordHash };
      await task.update(withAgentSession(task.node, {
        provision_state: next.state,
        target_provision_state: next.target,
        provision_updated_at: new Date(),
        last_error: null,
        ...(instanceInfo ? { instance_info: instanceInfo } : {}),
        ...(internal ? { driver_internal_info: internal } : {}),
      }));
      await task.recordHistory({ eventType: 'provisioning', severity: 'INFO', event: `${action}: ${status.state} → ${next.state}` });
      abortsCleaning = status.state === 'clean wait' && next.state === 'clean failed';
      abortsInspection = status.state === 'inspect wait' && next.state === 'inspect failed';
      abortsRescue = status.state === 'rescue wait' && next.state === 'rescue failed';
    } catch (err) {
      await task.release();
      throw err;
    }
    if (abortsCleaning) {
      this.background(task, async () => abortCleaning(task, await this.driverTask(task), (d) => this.readPower(d)));
      return;
    }
    if (abortsInspection || abortsRescue) {
      this.background(task, () => this.abortWaiting(task, abortsRescue ? 'rescue' : 'inspection'));
      return;
    }
    this.background(task, () => this.drive(task));
  }

  /**
   * Checks, before the node changes, that its interfaces can do what `event` asks, as Ironic's
   * conductor validates before it moves the node: `inspect` needs an inspect interface other than
   * `no-inspect`, `rescue`/`unrescue` one other than `no-rescue` (both refuse with
   * `UnsupportedDriverExtension`), and a manual `clean` needs `clean_steps` that the node's interfaces
   * offer. Returns the `driver_internal_info` to write with the new state, if it changes.
   */
  private async checkSupported(task: NodeTask, event: string, cleanSteps: readonly CleanStepRequest[] | undefined): Promise<Record<string, unknown> | undefined> {
    if (cleanSteps !== undefined && event !== 'clean') throw new InvalidParameter('"clean_steps" is only valid when setting target provision state to clean');
    const driverTask = await this.driverTask(task);
    const { driver } = driverTask;
    switch (event) {
      case 'inspect':
        await driver.inspect.validate(driverTask);
        await driver.power.validate(driverTask);
        return undefined;
      case 'rescue':
        await driver.rescue.validate(driverTask);
        await driver.power.validate(driverTask);
        return undefined;
      case 'unrescue':
        await driver.rescue.validate(driverTask);
        return undefined;
      case 'clean': {
        if (cleanSteps === undefined) throw new InvalidParameter('"clean_steps" is required when setting target provision state to clean');
        validateCleanSteps(driverTask, cleanSteps);
        await driver.power.validate(driverTask);
        // The steps to run, kept where Ironic keeps them; nothing of an earlier clean's progress.
        return { ...withoutCleanBookkeeping(task.node.driver_internal_info), clean_steps: cleanSteps.map((s) => ({ ...s })) };
      }
      default:
        return undefined;
    }
  }

  /**
   * Moves a node through intermediate states until it rests: each state's work is done by the
   * driver, then `done`, `wait` or `fail` moves it on.
   */
  private async drive(task: NodeTask): Promise<void> {
    const ports = await this.runSteps(task);
    await this.releaseOnOwnBootFiles(task, ports);
  }

  /**
   * Releases a node whose work left it resting on boot files made here with `conductor_affinity`
   * naming this conductor, in the same conditional write (the one path that sets affinity, as a
   * take-over's release does), and tells the reconciler the files are current as of that write.
   * Any other node is left to the caller's plain release.
   */
  private async releaseOnOwnBootFiles(task: NodeTask, ports: readonly DriverPort[] | undefined): Promise<void> {
    const me = this.deps.conductorId?.();
    if (me === undefined || ports === undefined || !restsOnOwnBootFiles(task.node.provision_state as ProvisionState)) return;
    const released = await task.release({ affinity: me });
    if (released !== null) this.deps.bootStateMade?.(released.uuid, released.stamp, ports);
  }

  /**
   * The steps of `drive`; returns the ports the driver work of the last step that moved the node
   * saw (undefined when no step moved it: then no work of this drive made its files).
   */
  private async runSteps(task: NodeTask): Promise<readonly DriverPort[] | undefined> {
    let ports: readonly DriverPort[] | undefined;
    for (let steps = 0; steps < 10; steps++) {
      const node = task.node;
      const status: ProvisionStatus = { state: node.provision_state as ProvisionState, target: node.target_provision_state as StableState | null };
      let result: StepResult;
      let error: string | null = null;
      let stepPorts: readonly DriverPort[] | undefined;
      try {
        const driverTask = await this.driverTask(task);
        stepPorts = driverTask.ports;
        result = await this.work(task, driverTask, status);
      } catch (err) {
        error = (err as Error).message;
        // A failed adoption leaves the recorded power state meaningless, as Ironic wipes it.
        result = { event: 'fail', ...(status.state === 'adopting' ? { changes: { power_state: null } } : {}) };
      }
      const { event } = result;
      if (event === null) return ports;
      // A step the table refuses is a bug in this file, not the node's fault: fail loudly.
      const next = transition(status, event);
      await task.update(withAgentSession(task.node, {
        ...result.changes,
        provision_state: next.state,
        target_provision_state: next.target,
        provision_updated_at: new Date(),
        ...(error !== null ? { last_error: error } : {}),
      }, result.keepAgent === true));
      ports = stepPorts;
      await task.recordHistory({
        eventType: 'provisioning',
        severity: event === 'fail' ? 'ERROR' : 'INFO',
        event: `${status.state} → ${next.state}${error !== null ? `: ${error}` : ''}`,
      });
      if (event === 'wait' || event === 'fail') return ports;
    }
    return ports;
  }

  /** The driver work of one intermediate state; a null event for a state that rests. */
  private async work(task: NodeTask, driverTask: DriverTask, status: ProvisionStatus): Promise<StepResult> {
    const { driver } = driverTask;
    switch (status.state) {
      case 'verifying':
        return this.verify(task, driverTask);
      case 'cleaning':
        return clean(task, driverTask, status, { automatedClean: this.deps.automatedClean !== false, readPower: (d) => this.readPower(d) });
      case 'inspecting': {
        // The agent interface boots the node and waits for its inventory (`continueInspection`).
        const outcome = await driver.inspect.inspectHardware(driverTask);
        return outcome === 'wait' ? { event: 'wait', changes: await this.readPower(driverTask) } : { event: 'done' };
      }
      case 'rescuing': {
        // The agent rescue boots the node and waits for its agent (`rescue wait`); back here once
        // the agent set the rescue user, to finish: the password's hash and the flag go.
        if ((await driver.rescue.rescue(driverTask)) === 'wait') return { event: 'wait', changes: await this.readPower(driverTask) };
        const { [RESCUE_PASSWORD_KEY]: _hash, ...instanceInfo } = task.node.instance_info;
        const { [RESCUE_FINALIZED_KEY]: _done, ...internal } = task.node.driver_internal_info;
        return { event: 'done', changes: { instance_info: instanceInfo, driver_internal_info: internal } };
      }
      case 'unrescuing':
        await driver.rescue.unrescue(driverTask);
        return { event: 'done' };
      case 'adopting':
        return this.adopt(task, driverTask);
      case 'deploying': {
        await driver.deploy.validate(driverTask);
        await driver.deploy.prepare(driverTask);
        const outcome = await driver.deploy.deploy(driverTask);
        if (typeof outcome === 'object') {
          return { event: 'wait', changes: { driver_internal_info: { ...task.node.driver_internal_info, ...outcome.internal }, ...(await this.readPower(driverTask)) } };
        }
        return { event: outcome, changes: await this.readPower(driverTask) };
      }
      case 'deleting':
        // Tear-down ends in cleaning, as in Ironic: the node is cleaned before it is available again.
        // The instance's fields go with the instance (Ironic clears them at tear-down, never at provide).
        await driver.deploy.tearDown(driverTask);
        await driver.deploy.cleanUp(driverTask);
        return { event: 'clean', changes: { instance_uuid: null, instance_info: {}, driver_internal_info: withoutCleanBookkeeping(task.node.driver_internal_info), ...(await this.readPower(driverTask)) } };
      default:
        return { event: null };
    }
  }

  /**
   * `adopting` (Ironic's `do_node_adopt`): the boot and deploy interfaces validate, the node is
   * taken over as a new owner would (the instance's boot files), and the BMC is asked what the
   * machine is doing — its power state, which must answer (a node adopted blind would be
   * recorded `active` with nothing known of it: `adopt failed` instead), and its boot device,
   * recorded in the history beside it. Nothing is written to the machine's disks.
   */
  private async adopt(task: NodeTask, driverTask: DriverTask): Promise<StepResult> {
    const { boot, deploy, management, power } = driverTask.driver;
    await boot.validate(driverTask);
    await deploy.prepare(driverTask);
    await deploy.takeOver(driverTask);
    let state: PowerState;
    try {
      state = await power.getPowerState(driverTask);
    } catch (err) {
      throw new Error(`the BMC did not say whether the machine runs: ${(err as Error).message}`, { cause: err });
    }
    let device = 'unknown';
    try {
      const read = await management.getBootDevice(driverTask);
      device = `${read.boot_device ?? 'unknown'}${read.persistent === true ? ' (persistent)' : read.persistent === false ? ' (once)' : ''}`;
    } catch (err) {
      device = `unknown (${(err as Error).message})`;
    }
    await task.recordHistory({ eventType: 'provisioning', severity: 'INFO', event: `adopted: the BMC says ${state}, boot device ${device}` });
    return { event: 'done', changes: { power_state: state } };
  }

  /**
   * `verifying` (Ironic's `do_node_verify`): the power interface's fields must validate and the BMC
   * must answer a power-state read with these credentials; the node goes back to `enroll` with
   * `last_error` saying which of the two failed, or on to `manageable` with its power state recorded.
   */
  private async verify(task: NodeTask, driverTask: DriverTask): Promise<StepResult> {
    const { power, management } = driverTask.driver;
    const uuid = task.node.uuid;
    try {
      await power.validate(driverTask);
      await management.validate(driverTask);
    } catch (err) {
      throw new Error(`Failed to validate power driver interface for node ${uuid}. Error: ${(err as Error).message}`, { cause: err });
    }
    let state: PowerState;
    try {
      state = await power.getPowerState(driverTask);
    } catch (err) {
      // The BMC's own answer (ipmitool's, naming the BMC and the attempts) says more than our wrapper.
      const cause = err instanceof PowerActionFailed && err.cause instanceof Error ? err.cause : (err as Error);
      throw new Error(`Failed to get power state for node ${uuid}. Error: ${cause.message}`, { cause: err });
    }
    return { event: 'done', changes: { power_state: state } };
  }

  /**
   * The power state the BMC reports after a provision step changed it, to be written with the new
   * state. A failed read does not fail the step (the work is done); it records the state as unknown
   * (null), which the power-state sync fills in on its next pass.
   */
  private async readPower(driverTask: DriverTask): Promise<NodePatch> {
    try {
      return { power_state: await driverTask.driver.power.getPowerState(driverTask) };
    } catch (err) {
      this.deps.logger.warn({ node: driverTask.node.uuid, err: (err as Error).message }, 'could not read the power state after a provision step');
      return { power_state: null };
    }
  }

  /** Starts a power action (`power on`, `power off`, `rebooting`…); resolves once accepted. */
  async power(uuid: string, target: string, timeout?: number): Promise<void> {
    if (!isPowerAction(target)) throw new InvalidParameter(`target: ${JSON.stringify(target)} is not a power action; use power on, power off or rebooting`);
    const task = await this.lock(uuid, `power ${target}`);
    try {
      if (task.node.target_power_state !== null) throw new Conflict(`node ${task.node.uuid} is already changing power state to ${task.node.target_power_state}`);
      const final = target === 'power off' || target === 'soft power off' ? 'power off' : 'power on';
      await task.update({ target_power_state: final, last_error: null });
    } catch (err) {
      await task.release();
      throw err;
    }
    this.background(task, async () => {
      const driverTask = await this.driverTask(task);
      try {
        if (target === 'rebooting' || target === 'soft rebooting') await driverTask.driver.power.reboot(driverTask, timeout);
        else await driverTask.driver.power.setPowerState(driverTask, target === 'soft power off' ? 'power off' : (target as 'power on' | 'power off'), timeout);
        const state = await driverTask.driver.power.getPowerState(driverTask);
        // An agent left up (fast track) does not survive this: its session ends with it.
        const ends = target !== 'power on' && !expectsAgent(task.node.provision_state);
        await task.update({ power_state: state, target_power_state: null, ...(ends ? endAgentSession(task.node) : {}) });
        await task.recordHistory({ eventType: 'power', severity: 'INFO', event: `${target}: now ${state}` });
      } catch (err) {
        await task.update({ target_power_state: null, last_error: (err as Error).message });
        await task.recordHistory({ eventType: 'power', severity: 'ERROR', event: `${target} failed: ${(err as Error).message}` });
      }
    });
  }

  async setBootDevice(uuid: string, device: string, persistent: boolean): Promise<void> {
    if (!(BOOT_DEVICES as readonly string[]).includes(device)) throw new InvalidParameter(`boot_device: ${JSON.stringify(device)} is not one of ${BOOT_DEVICES.join(', ')}`);
    await withTask(this.deps.store, uuid, { host: this.deps.host, tracker: this.deps.tracker, purpose: 'boot device', retry: this.deps.retry }, async (task) => {
      const driverTask = await this.driverTask(task);
      await driverTask.driver.management.setBootDevice(driverTask, device as BootDevice, persistent);
    });
  }

  async getBootDevice(uuid: string): Promise<{ boot_device: string | null; persistent: boolean | null }> {
    return withTask(this.deps.store, uuid, { host: this.deps.host, shared: true }, async (task) => {
      const driverTask = await this.driverTask(task);
      return driverTask.driver.management.getBootDevice(driverTask);
    });
  }

  private agentSession(): AgentSessionDeps {
    const { store, host, tracker, retry } = this.deps;
    return {
      store,
      lockOptions: (purpose) => ({ host, tracker, purpose, retry }),
      driverTask: (task) => this.driverTask(task),
      resume: (task) => this.background(task, () => this.drive(task)),
    };
  }

  /**
   * Registers the agent token of a node's first lookup (its digest; see `agent-session.ts`):
   * `issued` false when the node already has one.
   */
  agentToken(uuid: string, tokenHash: string): Promise<{ issued: boolean }> {
    return registerAgentToken(this.agentSession(), uuid, tokenHash);
  }

  /** Records a heartbeat of the node's agent and lets its deploy interface continue (`agent-session.ts`). */
  heartbeat(uuid: string, heartbeat: HeartbeatRecord): Promise<void> {
    return recordHeartbeat(this.agentSession(), uuid, heartbeat);
  }

  /**
   * The agent's inventory for a node in `inspect wait` (Ironic's `continue_inspection`): checked
   * here — the node still waits for it, and a node whose agent looked up (it holds a token) must be
   * sent that token — then processed in the background under the node's lock
   * (`inspection.ts`): properties and ports, the inventory stored, `manageable` (or
   * `inspect failed` with `last_error`). `tokenHash` is the digest of the token the agent sent, or
   * null when it sent none (IPA, which posts before any lookup).
   */
  async continueInspection(uuid: string, tokenHash: string | null, data: InspectionData): Promise<void> {
    const check = (node: NodeRow) => {
      if (node.provision_state !== 'inspect wait') throw new Conflict(`node ${node.uuid} is in provision state "${node.provision_state}", not "inspect wait": it is not waiting for an inventory`);
      if (node.agent_token_hash !== null && (tokenHash === null || !agentTokenMatches(tokenHash, node.agent_token_hash))) throw new InvalidParameter(INVALID_AGENT_TOKEN);
    };
    // A wrong token is refused from a plain read, before the lock (as heartbeats are).
    check((await acquireTask(this.deps.store, uuid, { host: '', shared: true })).node);
    const task = await this.lock(uuid, 'continue inspection');
    try {
      check(task.node);
    } catch (err) {
      await task.release();
      throw err;
    }
    this.background(task, async () => {
      const driverTask = await this.driverTask(task);
      const status: ProvisionStatus = { state: task.node.provision_state as ProvisionState, target: task.node.target_provision_state as StableState | null };
      let changes: NodePatch = {};
      let keepAgent = false;
      let error: string | null = null;
      try {
        ({ changes, keepAgent } = await finishInspection(task, driverTask, data, { store: this.deps.store, settings: this.deps.inspector ?? DEFAULT_INSPECTOR_SETTINGS, readPower: (d) => this.readPower(d) }));
      } catch (err) {
        error = `inspection failed: ${(err as Error).message}`;
        changes = await this.readPower(driverTask);
      }
      const next = transition(status, error === null ? 'done' : 'fail');
      await task.update(withAgentSession(task.node, { ...changes, provision_state: next.state, target_provision_state: next.target, provision_updated_at: new Date(), last_error: error }, keepAgent));
      await task.recordHistory({ eventType: 'provisioning', severity: error === null ? 'INFO' : 'ERROR', event: `${status.state} → ${next.state}${error !== null ? `: ${error}` : ''}` });
    });
  }

  /**
   * An aborted `inspect wait` or `rescue wait` (Ironic's abort of each): the ramdisk torn down, the
   * node powered off; a rescue's password hash goes too.
   */
  private async abortWaiting(task: NodeTask, what: 'inspection' | 'rescue'): Promise<void> {
    const driverTask = await this.driverTask(task);
    let error = `By request, the ${what} operation has been aborted`;
    try {
      if (what === 'inspection') await driverTask.driver.inspect.tearDownInspection?.(driverTask, true);
      else await driverTask.driver.rescue.tearDownRescue?.(driverTask);
    } catch (err) {
      error += `; ending the ${what} failed: ${(err as Error).message}`;
    }
    const { [RESCUE_PASSWORD_KEY]: _hash, ...instanceInfo } = task.node.instance_info;
    await task.update({ last_error: error, ...(what === 'rescue' ? { instance_info: instanceInfo } : {}), ...(await this.readPower(driverTask)) });
    await task.recordHistory({ eventType: what, severity: 'WARNING', event: error });
  }

  /**
   * Fails a node that waited `seconds` too long for its agent in `state` (`wait-timeouts.ts`), with
   * Ironic's message: the ramdisk's boot files go and the node powers off (what fails there is
   * added to the message, never hidden), then the state's failure, the agent session ended. False
   * when the node is locked (someone is on it: the next pass looks again) or no longer in `state`.
   */
  async failWaitTimeout(uuid: string, state: string, seconds: number): Promise<boolean> {
    let task: NodeTask;
    try {
      task = await this.lock(uuid, 'wait timeout', { attempts: 1, intervalMs: 0 });
    } catch (err) {
      if (err instanceof NodeLocked) return false;
      throw err;
    }
    try {
      if (task.node.provision_state !== state) return false;
      const driverTask = await this.driverTask(task);
      const step = task.node.driver_internal_info.clean_step as { interface?: string; step?: string } | undefined;
      const messages: Record<string, string> = {
        'wait call-back': `Timeout reached while waiting for callback for node ${uuid}`,
        'clean wait': `Timeout reached while cleaning the node. Please check if the ramdisk responsible for the cleaning is running on the node.${step?.step ? ` Failed on step ${step.interface}.${step.step}.` : ''}`,
        'inspect wait': 'Timeout reached while inspecting the node',
        'rescue wait': `Timeout reached while waiting for rescue ramdisk callback for node ${uuid}`,
      };
      let error = `${messages[state] ?? `Timeout reached in ${state}`} (waited more than ${seconds} s)`;
      try {
        if (state === 'wait call-back') await driverTask.driver.deploy.cleanUp(driverTask);
        else await driverTask.driver.boot.cleanUpRamdisk(driverTask);
        await driverTask.driver.power.setPowerState(driverTask, 'power off');
      } catch (err) {
        error += `; powering the node off failed: ${(err as Error).message}`;
      }
      const status: ProvisionStatus = { state: task.node.provision_state as ProvisionState, target: task.node.target_provision_state as StableState | null };
      const next = transition(status, 'fail');
      const { [RESCUE_PASSWORD_KEY]: _hash, ...instanceInfo } = task.node.instance_info;
      await task.update(withAgentSession(task.node, {
        ...(await this.readPower(driverTask)),
        ...(state === 'clean wait' ? { driver_internal_info: withoutCleanBookkeeping(task.node.driver_internal_info) } : {}),
        ...(state === 'rescue wait' ? { instance_info: instanceInfo } : {}),
        provision_state: next.state,
        target_provision_state: next.target,
        provision_updated_at: new Date(),
        last_error: error,
      }));
      await task.recordHistory({ eventType: 'provisioning', severity: 'ERROR', event: `${status.state} → ${next.state}: ${error}` });
      return true;
    } finally {
      await task.release();
    }
  }

  async setMaintenance(uuid: string, on: boolean, reason: string | null): Promise<void> {
    await withTask(this.deps.store, uuid, { host: this.deps.host, tracker: this.deps.tracker, purpose: 'maintenance', retry: this.deps.retry }, async (task) => {
      await task.update({ maintenance: on, maintenance_reason: on ? reason : null });
    });
  }
}
