/**
 * What a conductor does to a node on request: update (JSON Patch), delete, provision actions, power,
 * boot device, maintenance. Every change holds the node's lock through one task; long work (deploy,
 * clean, power changes) runs in the background after the request is accepted, as in Ironic, and the
 * lock is held until it ends.
 *
 * The provision verbs are in `provision-actions.ts`, the work of the states they lead through in
 * `provision-steps.ts` (`adoption.ts`: verify and adopt), and the ends of the waits for a node's
 * agent in `waiting-work.ts`; they work through `NodeWork`, what this class gives them of itself.
 */
import type { Logger } from '../common/logger.js';
import { Conflict, InvalidParameter } from '../common/errors.js';
import { NodeLocked } from '../cluster/errors.js';
import { acquireTask, withTask } from '../cluster/task.js';
import type { NodePatch, NodeTask, TaskTracker } from '../cluster/task.js';
import type { Store } from '../db/connect.js';
import { isForeignKeyViolation, uniqueViolation } from '../db/errors.js';
import type { DriverRegistry } from '../drivers/index.js';
import { BOOT_DEVICES, UnknownInterface } from '../drivers/index.js';
import type { BootDevice, CleanStepRequest, DriverPort, DriverTask } from '../drivers/index.js';
import type { DeployStepRequest } from '../drivers/deploy-steps.js';
import { applyNodePatch } from '../nodes/node-patch.js';
import type { PatchOperation } from '../nodes/node-patch.js';
import { unknownChassisOfNode } from '../nodes/chassis-store.js';
import { nodeColumns } from '../nodes/node-store.js';
import type { NodeRow } from '../nodes/node-store.js';
import { expectsAgent } from '../nodes/state-machine.js';
import { protectionChanges, refuseIfProtected } from '../nodes/protection.js';
import { retirementChanges } from '../nodes/retirement.js';
import { isPowerAction, WORKING_STATES } from '../nodes/states.js';
import type { ProvisionAction } from '../nodes/states.js';
import type { InspectorSettings } from './inspection.js';
import type { InspectionData } from '../agent/inspection-data.js';
import { failStrandedWork, resumeEvent, whyNotResume } from './stranded-work.js';
import { endAgentSession, recordHeartbeat, registerAgentToken } from './agent-session.js';
import type { AgentSessionDeps, HeartbeatRecord } from './agent-session.js';
import { provision } from './provision-actions.js';
import { getConsole, setConsoleMode, setTargetRaidConfig } from './console-raid.js';
import type { ConsoleState } from './console-raid.js';
import { drive, readPower } from './provision-steps.js';
import { clearInstanceAllocation } from './allocations.js';
import { changeBootSetting } from './boot-mode.js';
import type { NodeBootMode } from '../drivers/capabilities.js';
import { continueInspection, failWaitTimeout } from './waiting-work.js';

/** Options of a provision action as the API passes them on. */
export interface ProvisionOptions {
  configdrive?: unknown;
  /** The steps of a manual clean (`clean`), already shaped by `parseCleanSteps`. */
  cleanSteps?: readonly CleanStepRequest[];
  /** `rescue`: the crypt hash of the rescue password (the API hashed it). */
  rescuePasswordHash?: string;
  /** `deploy`/`rebuild`: the request's `deploy_steps` (API 1.69), already shaped by `checkDeploySteps`. */
  deploySteps?: readonly DeployStepRequest[];
  /** A manual clean that boots no ramdisk (API 1.70): only steps that need none are accepted. */
  disableRamdisk?: boolean;
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
 * What the modules that do a node's work on this class's behalf (`provision-actions.ts`,
 * `provision-steps.ts`, `waiting-work.ts`) get of it: its dependencies, the node's lock, background
 * work tracked in `running`, the driver bound to a node, and the power state read after a step.
 */
export interface NodeWork {
  deps: NodeOperationsDeps;
  /** Takes the node's lock (an exclusive task), retrying as `retry` says (default `deps.retry`). */
  lock: (uuid: string, purpose: string, retry?: { attempts: number; intervalMs: number }) => Promise<NodeTask>;
  /** Takes the node's lock at the first try, or null when someone holds it (periodic work looks again later). */
  tryLock: (uuid: string, purpose: string) => Promise<NodeTask | null>;
  /** Runs `work` in the background under `task`, which is released when it ends. */
  background: (task: NodeTask, work: () => Promise<void>) => void;
  /** The node's driver, bound to the task's node and ports. */
  driverTask: (task: NodeTask) => Promise<DriverTask>;
  /** The power state to write with a step's new state (`readPower` of `provision-steps.ts`). */
  readPower: (driverTask: DriverTask) => Promise<NodePatch>;
}

const RESUMABLE_STATES: ReadonlySet<string> = new Set(WORKING_STATES);

export class NodeOperations {
  /** Background work in flight, so tests and shutdown can wait for it. */
  readonly running = new Set<Promise<void>>();
  /** What the actions of other modules (`node-extras-rpc.ts`: VIFs, NMI, vendor passthru) work through. */
  get nodeWork(): NodeWork {
    return this.work;
  }
  /** What this class's work modules get of it (`NodeWork`). */
  private readonly work: NodeWork;

  constructor(private readonly deps: NodeOperationsDeps) {
    this.work = {
      deps,
      lock: (uuid, purpose, retry) => this.lock(uuid, purpose, retry),
      tryLock: (uuid, purpose) => this.tryLock(uuid, purpose),
      background: (task, work) => this.background(task, work),
      driverTask: (task) => this.driverTask(task),
      readPower: (driverTask) => readPower(this.deps.logger, driverTask),
    };
  }

  private lock(uuid: string, purpose: string, retry = this.deps.retry): Promise<NodeTask> {
    const { store, host, tracker } = this.deps;
    return acquireTask(store, uuid, { host, tracker, purpose, retry });
  }

  private async tryLock(uuid: string, purpose: string): Promise<NodeTask | null> {
    try {
      return await this.lock(uuid, purpose, { attempts: 1, intervalMs: 0 });
    } catch (err) {
      if (err instanceof NodeLocked) return null;
      throw err;
    }
  }

  /**
   * Takes over a working state (deploying, cleaning, deleting, verifying…) whose conductor went
   * away: resumes it where that is safe, instead of failing it as Ironic does, and otherwise fails it
   * to its failure state with `last_error` (maintenance, or interrupted again after a resume: see
   * `stranded-work.ts`). Null when the node is locked (someone is on it) or no longer in a working
   * state.
   */
  async resume(uuid: string): Promise<'resumed' | 'failed' | null> {
    const task = await this.tryLock(uuid, 'resume');
    if (task === null) return null;
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
    this.background(task, () => drive(this.work, task));
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

  /**
   * Applies a JSON Patch; returns the updated node. A new driver keeps the node's interfaces (each
   * must be one the driver enables: 400 otherwise, as Ironic) unless `resetInterfaces` (API 1.45's
   * `reset_interfaces`): then those the patch does not set go to the new driver's defaults.
   */
  async update(uuid: string, ops: readonly PatchOperation[], resetInterfaces = false): Promise<NodeRow> {
    return withTask(this.deps.store, uuid, { host: this.deps.host, tracker: this.deps.tracker, purpose: 'update', retry: this.deps.retry }, async (task) => {
      // Protection and maintenance have rules beyond their fields' (Ironic's conductor's).
      const changes = applyNodePatch(task.node, ops);
      Object.assign(changes, protectionChanges(task.node, changes));
      Object.assign(changes, retirementChanges(task.node, changes));
      const driver = changes.driver ?? task.node.driver;
      const requested: Record<string, string | null | undefined> = {};
      for (const [key, value] of Object.entries(task.node)) if (key.endsWith('_interface')) requested[key] = value as string | null;
      for (const [key, value] of Object.entries(changes)) if (key.endsWith('_interface')) requested[key] = value as string | null;
      const newDriver = changes.driver !== undefined && changes.driver !== task.node.driver;
      const resolved = newDriver && resetInterfaces
        ? this.deps.drivers.validateInterfaces(driver, Object.fromEntries(Object.entries(changes).filter(([k]) => k.endsWith('_interface'))) as Record<string, string | null>)
        : keptInterfaces(() => this.deps.drivers.validateInterfaces(driver, requested), newDriver);
      if (changes.instance_uuid !== undefined && task.node.instance_uuid !== null && changes.instance_uuid !== null && changes.instance_uuid !== task.node.instance_uuid) {
        throw new Conflict(`node ${task.node.uuid} is already associated with instance ${task.node.instance_uuid}`);
      }
      // Clearing the instance of a node with an allocation removes the allocation, as Ironic's.
      if (changes.instance_uuid === null) await clearInstanceAllocation(this.deps.store, task.node);
      // A chassis named by uuid is stored by id (400 naming chassis_uuid when there is none).
      const columns = await nodeColumns(this.deps.store, changes as { chassis_uuid?: string | null });
      try {
        return await task.update({ ...columns, ...resolved } as NodePatch);
      } catch (err) {
        if (isForeignKeyViolation(err) && typeof changes.chassis_uuid === 'string') throw unknownChassisOfNode(changes.chassis_uuid);
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
      // In maintenance a node with an instance (or an allocation, which goes with it) may go, as Ironic's.
      if (node.instance_uuid !== null && !node.maintenance) throw new Conflict(`node ${node.uuid} is associated with instance ${node.instance_uuid}; undeploy it first`);
      refuseIfProtected(node);
      if (!DELETE_ALLOWED_STATES.includes(node.provision_state)) {
        throw new Conflict(`node ${node.uuid} cannot be deleted in provision state "${node.provision_state}"; allowed in: ${DELETE_ALLOWED_STATES.join(', ')}`);
      }
      await this.deps.store.db.deleteFrom('nodes').where('id', '=', node.id).where('reservation', '=', this.deps.host).execute();
    });
  }

  /**
   * Starts a provision action; resolves once the node is in its first intermediate state. Refuses
   * (400, nothing written) an action the node's interfaces cannot perform (`provision-actions.ts`).
   */
  provision(uuid: string, action: ProvisionAction, options: ProvisionOptions = {}): Promise<void> {
    return provision(this.work, uuid, action, options);
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

  /** The node's console state and, while enabled, how to reach it (`console-raid.ts`). */
  getConsole(uuid: string): Promise<ConsoleState> {
    return getConsole(this.work, uuid);
  }

  /** Starts or stops the node's console; resolves once accepted (`console-raid.ts`). */
  setConsoleMode(uuid: string, enabled: boolean): Promise<void> {
    return setConsoleMode(this.work, uuid, enabled);
  }

  /** Changes the node's boot mode through its management interface; resolves once accepted (`boot-mode.ts`). */
  setBootMode(uuid: string, mode: NodeBootMode): Promise<void> {
    return changeBootSetting(this.work, uuid, { kind: 'boot_mode', target: mode });
  }

  /** Turns the node's secure boot on or off through its management interface (`boot-mode.ts`). */
  setSecureBoot(uuid: string, on: boolean): Promise<void> {
    return changeBootSetting(this.work, uuid, { kind: 'secure_boot', target: on });
  }

  /** Stores the node's target RAID configuration, checked by its RAID interface (`console-raid.ts`). */
  setTargetRaidConfig(uuid: string, config: Record<string, unknown>): Promise<void> {
    return setTargetRaidConfig(this.work, uuid, config);
  }

  private agentSession(): AgentSessionDeps {
    const { store, host, tracker, retry } = this.deps;
    return {
      store,
      lockOptions: (purpose) => ({ host, tracker, purpose, retry }),
      driverTask: (task) => this.driverTask(task),
      resume: (task) => this.background(task, () => drive(this.work, task)),
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
   * The agent's inventory for a node in `inspect wait` (Ironic's `continue_inspection`): checked,
   * then processed in the background under the node's lock (`waiting-work.ts`). `tokenHash` is the
   * digest of the token the agent sent, or null when it sent none (IPA, which posts before any lookup).
   */
  continueInspection(uuid: string, tokenHash: string | null, data: InspectionData): Promise<void> {
    return continueInspection(this.work, uuid, tokenHash, data);
  }

  /**
   * Fails a node that waited `seconds` too long for its agent in `state` (`wait-timeouts.ts` finds
   * it; `waiting-work.ts`). False when the node is locked (someone is on it: the next pass looks
   * again) or no longer in `state`.
   */
  failWaitTimeout(uuid: string, state: string, seconds: number): Promise<boolean> {
    return failWaitTimeout(this.work, uuid, state, seconds);
  }

  async setMaintenance(uuid: string, on: boolean, reason: string | null): Promise<void> {
    await withTask(this.deps.store, uuid, { host: this.deps.host, tracker: this.deps.tracker, purpose: 'maintenance', retry: this.deps.retry }, async (task) => {
      await task.update({ maintenance: on, maintenance_reason: on ? reason : null });
    });
  }
}

/**
 * The interfaces a patch leaves the node with; when a new driver does not enable one the node keeps,
 * the refusal says how to go on (set it in the same patch, or reset the interfaces).
 */
function keptInterfaces<T>(resolve: () => T, newDriver: boolean): T {
  try {
    return resolve();
  } catch (err) {
    if (!newDriver || !(err instanceof UnknownInterface)) throw err;
    throw new InvalidParameter(`${err.message}; set it in the same patch, or send ?reset_interfaces=true (API 1.45) to reset the interfaces the patch does not set to the new driver's defaults`);
  }
}
