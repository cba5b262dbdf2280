/**
 * The `direct` deploy interface (Ironic's `direct`): the node boots the deploy ramdisk, whose agent
 * (`ironring agent`, or IPA) writes a whole-disk image to the node's disk; then the node boots from
 * that disk and no longer depends on any conductor.
 *
 * The deploy as the node's owner drives it, one short step per call (the state it is at lives in
 * `driver_internal_info.direct_deploy`, so a conductor taking the node over goes on from there):
 * 1. `deploy` (from `deploying`): a qcow2 image starts converting on this conductor (in the
 *    background, `InstanceImagePort`); boot files for the deploy ramdisk with `ipa-api-url`, boot
 *    device network (once), power on → `wait call-back`.
 * 2. The agent looks up and heartbeats; `heartbeat` sends `standby.prepare_image` (not waiting) and
 *    records the command → the node stays in `wait call-back`, `deploy_step` `write_image`. A qcow2
 *    image is sent once converted (heartbeats before that wait; its owner after a take-over
 *    converts its own copy the same way).
 * 3. Later heartbeats ask the agent how that command went: running → wait; failed → `deploy failed`
 *    with the agent's message; succeeded → `resume`: back to `deploying`.
 * 4. `deploy` again (phase `written`): flush the disk through the agent, power off, replace the
 *    deploy ramdisk's entry by one that boots the local disk, boot device disk (persistent), power
 *    on → `active`.
 */
import { AgentClient } from '../../agent/agent-client.js';
import type { AgentEndpoint } from '../../agent/agent-client.js';
import { buildConfigDrive, checkConfigDriveSpec } from '../../boot/config-drive-iso.js';
import { bootNeed } from '../../nodes/state-machine.js';
import type { CleanStep, CleanStepRequest, CleanStepWait } from '../clean-steps.js';
import type { AgentContact, AgentProgress, DeployInterface, DeployOutcome, DeployWait } from '../deploy.js';
import { InvalidParameterValue } from '../errors.js';
import { nodeBootMode } from '../capabilities.js';
import { optionalString } from '../fields.js';
import type { DriverTask } from '../task.js';
import { agentRamdiskParams, bootAgentRamdisk, requireAgentApiUrl } from './agent-ramdisk.js';
import { directImageInfo, directImageSource } from './image-info.js';
import type { DirectImageSource, StagedRawImage } from './image-info.js';

/** The `driver_internal_info` key holding where a direct deploy is. */
export const DIRECT_DEPLOY_KEY = 'direct_deploy';

/** Ironic's `write_image` deploy step, as `deploy_step` shows it while the agent writes. */
export const WRITE_IMAGE_STEP = { interface: 'deploy', step: 'write_image', priority: 80, argsinfo: null } as const;

/** Where a direct deploy is, as `driver_internal_info.direct_deploy` keeps it. */
export interface DirectDeployState {
  phase: 'writing' | 'written';
  /** The agent's id of the `standby.prepare_image` command. */
  command: string;
  /** What the agent said it wrote (`command_result.result`), once written. */
  result?: string;
}

/** Where the conversion of a qcow2 image is (`boot/instance-images.ts` implements the port). */
export type ImageStageStatus = { state: 'staging' } | { state: 'ready'; image: StagedRawImage } | { state: 'failed'; error: string };

/** The owning conductor's converter and server of qcow2 images. */
export interface InstanceImagePort {
  /** Starts or joins the conversion of `source` for `node`; answers at once. `retry`: start a failed one again. */
  stage(node: string, source: { url: string; checksum: string }, retry?: boolean): ImageStageStatus;
  /** The node no longer needs its converted image. */
  release(node: string): Promise<void>;
}

export interface DirectDeployOptions {
  /**
   * The API URL the agent looks up and heartbeats to (`ipa-api-url`), or null when none is
   * configured: then `validate` refuses the deploy, naming the setting.
   */
  apiUrl: () => string | null;
  client?: AgentClient;
  /** Converts and serves qcow2 images; absent (no HTTP boot server here): qcow2 is refused. */
  images?: InstanceImagePort;
  /**
   * Ironic's `[deploy] fast_track`: an agent that heartbeated within `timeoutSeconds`, on a node
   * powered on, that answers a short probe, is used without booting the node again, and cleaning
   * leaves the node up with its agent. Default off.
   */
  fastTrack?: { enabled: boolean; timeoutSeconds: number };
  /** Priority of the `erase_devices_metadata` clean step (`[deploy] erase_devices_metadata_priority`); default 99. */
  eraseMetadataPriority?: number;
  /**
   * The full overwrite, `erase_devices`: its priority (`[deploy] erase_devices_priority`, default 0:
   * manual only) and passes (`shred_random_overwrite_iterations`, default 1;
   * `shred_final_overwrite_with_zeros`, default true).
   */
  eraseDevices?: { priority: number; iterations: number; zeroize: boolean };
  /** The client of fast track's probe: short, one attempt (default 5 s). */
  probeClient?: AgentClient;
  /** `[inspector] extra_kernel_params`: a take-over in `inspect wait` rebuilds the files with them. */
  inspectionKernelParams?: Readonly<Record<string, string>>;
}

/** The agent's (IPA's) metadata erase, the direct deploy's automated clean step. */
export const ERASE_METADATA_STEP = 'erase_devices_metadata';
/** The agent's (IPA's) full overwrite of every disk. */
export const ERASE_DEVICES_STEP = 'erase_devices';

function stateOf(task: DriverTask): DirectDeployState | null {
  const value = task.node.driver_internal_info?.[DIRECT_DEPLOY_KEY];
  if (typeof value !== 'object' || value === null) return null;
  const { phase, command, result } = value as Record<string, unknown>;
  if ((phase !== 'writing' && phase !== 'written') || typeof command !== 'string') return null;
  return { phase, command, ...(typeof result === 'string' ? { result } : {}) };
}

export class DirectDeploy implements DeployInterface {
  private readonly client: AgentClient;
  private readonly probe: AgentClient;

  constructor(private readonly options: DirectDeployOptions) {
    this.client = options.client ?? new AgentClient();
    this.probe = options.probeClient ?? new AgentClient({ timeoutSeconds: 5, attempts: 1 });
  }

  async validate(task: DriverTask): Promise<void> {
    await task.driver.boot.validate(task);
    this.imageSource(task);
    await configDrive(task, false);
    this.apiUrl();
  }

  /** Nothing to stage before `deploy`: the deploy ramdisk's boot files are made there. */
  async prepare(task: DriverTask): Promise<void> {
    this.imageSource(task);
  }

  async deploy(task: DriverTask): Promise<DeployOutcome | DeployWait> {
    const state = stateOf(task);
    if (state?.phase === 'written') return this.bootInstance(task);
    // A qcow2 image converts while the deploy ramdisk boots.
    const source = this.imageSource(task);
    if (source.format !== 'raw') this.stage(task, source, true);
    const agent = await this.agentUp(task);
    if (agent !== null) {
      // Fast track: the agent left up by cleaning gets the image now, as its heartbeat would.
      task.logger.info({ agent: agent.url }, 'fast track: the node\'s agent is up; deploying without booting it again');
      const progress = await this.startWrite(task, agent);
      if (progress.kind === 'fail') throw new Error(progress.error);
      return { outcome: 'wait', internal: progress.internal ?? {} };
    }
    await this.bootRamdisk(task);
    return 'wait';
  }

  /** Boots the deploy ramdisk (`agent-ramdisk.ts`). */
  private bootRamdisk(task: DriverTask): Promise<void> {
    return bootAgentRamdisk(task, this.apiUrl());
  }

  /**
   * The agent of a fast-track session, when it can be used: fast track on, the session's token and
   * URL, a heartbeat within `fast_track_timeout` (the database clock's stamp against this host's),
   * the node powered on, and the agent answering a short probe. Null otherwise: the node boots.
   */
  private async agentUp(task: DriverTask): Promise<AgentEndpoint | null> {
    const fast = this.options.fastTrack;
    if (fast?.enabled !== true || !task.agentToken) return null;
    const internal = task.node.driver_internal_info ?? {};
    const url = internal.agent_url;
    const last = typeof internal.agent_last_heartbeat === 'string' ? Date.parse(internal.agent_last_heartbeat) : Number.NaN;
    if (typeof url !== 'string' || !(Date.now() - last <= fast.timeoutSeconds * 1000)) return null;
    if ((await task.driver.power.getPowerState(task)) !== 'power on') return null;
    const endpoint = { url, token: task.agentToken };
    try {
      await this.probe.commands(endpoint, task.signal);
    } catch (err) {
      task.logger.info({ agent: url, err: (err as Error).message }, 'fast track: the agent does not answer; booting the node');
      return null;
    }
    return endpoint;
  }

  /**
   * The clean steps the agent runs: the metadata erase (`[deploy] erase_devices_metadata_priority`)
   * and the full overwrite (`[deploy] erase_devices_priority`).
   */
  getCleanSteps(): readonly CleanStep[] {
    const full = this.eraseDevices();
    return [
      {
        interface: 'deploy',
        step: ERASE_METADATA_STEP,
        priority: this.options.eraseMetadataPriority ?? 99,
        description: "The deploy agent zeroes each disk's partition tables and file-system, RAID and LVM signatures (the first and last MiB of every disk and partition).",
      },
      {
        interface: 'deploy',
        step: ERASE_DEVICES_STEP,
        priority: full.priority,
        description: `The deploy agent overwrites every byte of each disk: ${full.iterations} random pass(es)${full.zeroize ? ', then zeros, read back' : ''}.`,
      },
    ];
  }

  private eraseDevices(): { priority: number; iterations: number; zeroize: boolean } {
    return this.options.eraseDevices ?? { priority: 0, iterations: 1, zeroize: true };
  }

  /** Cleaning runs in the agent: boots it (or, with fast track, uses the one up). */
  async prepareCleaning(task: DriverTask): Promise<'ready' | 'wait'> {
    if ((await this.agentUp(task)) !== null) return 'ready';
    await this.bootRamdisk(task);
    return 'wait';
  }

  /** Sends the step to the agent; the heartbeat that follows its end moves the clean on. */
  async executeCleanStep(task: DriverTask, step: CleanStepRequest): Promise<CleanStepWait | undefined> {
    const url = task.node.driver_internal_info?.agent_url;
    if (typeof url !== 'string' || !task.agentToken) throw new Error("the node's agent has not called back, so there is no agent to run it");
    if (step.step === ERASE_DEVICES_STEP && this.eraseDevices().iterations === 0 && !this.eraseDevices().zeroize) {
      throw new InvalidParameterValue('[deploy] shred_random_overwrite_iterations', 'is 0 and shred_final_overwrite_with_zeros is false: erase_devices would erase nothing');
    }
    const params = {
      step: { interface: step.interface, step: step.step, args: step.args ?? {}, priority: this.getCleanSteps().find((s) => s.step === step.step)?.priority ?? 0, reboot_requested: false, abortable: false },
      // As Ironic's conductor hands them to IPA: the erase's passes, in the node's driver_internal_info.
      node: { uuid: task.node.uuid, properties: task.node.properties, driver_internal_info: { agent_erase_devices_iterations: this.eraseDevices().iterations, agent_erase_devices_zeroize: this.eraseDevices().zeroize } },
      ports: task.ports.map((p) => ({ address: p.address })),
      clean_version: { generic_hardware_manager: '1.2' },
    };
    let started;
    try {
      started = await this.client.run({ url, token: task.agentToken }, 'clean.execute_clean_step', params, { wait: false, ...(task.signal ? { signal: task.signal } : {}) });
    } catch (err) {
      throw new Error(`the agent did not take clean.execute_clean_step: ${(err as Error).message}`, { cause: err });
    }
    switch (started.command_status) {
      case 'FAILED':
        throw new Error(`on the node: ${commandMessage(started)}`);
      case 'SUCCEEDED':
        return undefined;
      case 'RUNNING':
        return { kind: 'wait', state: { command: started.id } };
    }
  }

  /**
   * After the last clean step: the node powers off and its ramdisk's boot files go (Ironic's
   * `tear_down_cleaning`); with fast track, after a clean that succeeded, it stays up running the
   * agent for the deploy to use.
   */
  async tearDownCleaning(task: DriverTask, failed = false): Promise<{ keepAgent: boolean }> {
    await task.driver.boot.cleanUpRamdisk(task);
    if (!failed && this.options.fastTrack?.enabled === true && typeof task.node.driver_internal_info?.agent_url === 'string' && task.agentToken) return { keepAgent: true };
    await task.driver.power.setPowerState(task, 'power off');
    return { keepAgent: false };
  }

  async heartbeat(task: DriverTask, agent: AgentContact): Promise<AgentProgress> {
    const endpoint = this.endpoint(task, agent);
    if (task.node.provision_state === 'clean wait') return this.cleanHeartbeat(task, endpoint);
    const state = stateOf(task);
    if (state === null) return this.startWrite(task, endpoint);
    if (state.phase === 'written') return { kind: 'resume' };
    let command;
    try {
      command = await this.client.command(endpoint, state.command, task.signal);
    } catch (err) {
      return { kind: 'fail', error: `write_image: could not ask the agent how standby.prepare_image went: ${(err as Error).message}` };
    }
    if (command === null) return { kind: 'fail', error: `write_image: the agent no longer knows its standby.prepare_image command ${state.command} (did it restart?)` };
    switch (command.command_status) {
      case 'RUNNING':
        return { kind: 'wait' };
      case 'FAILED':
        return { kind: 'fail', error: `write_image failed on the node: ${commandMessage(command)}` };
      case 'SUCCEEDED':
        return this.written(state, command);
    }
  }

  /**
   * A heartbeat in `clean wait`: the agent booted for a clean (no step sent yet: the clean goes
   * on), or the clean step it runs (`clean_step_state.command`) ended — or not yet.
   */
  private async cleanHeartbeat(task: DriverTask, endpoint: AgentEndpoint): Promise<AgentProgress> {
    const internal = task.node.driver_internal_info ?? {};
    if (typeof internal.clean_step_index !== 'number') return { kind: 'wait' };
    const stepState = internal.clean_step_state;
    const id = typeof stepState === 'object' && stepState !== null ? (stepState as Record<string, unknown>).command : undefined;
    if (typeof id !== 'string') return { kind: 'resume' };
    const step = internal.clean_step as { interface?: unknown; step?: unknown } | undefined;
    const name = `clean step ${String(step?.interface)}.${String(step?.step)}`;
    let command;
    try {
      command = await this.client.command(endpoint, id, task.signal);
    } catch (err) {
      return { kind: 'fail', error: `${name}: could not ask the agent how it went: ${(err as Error).message}` };
    }
    if (command === null) return { kind: 'fail', error: `${name}: the agent no longer knows its command ${id} (did it restart?)` };
    switch (command.command_status) {
      case 'RUNNING':
        return { kind: 'wait' };
      case 'FAILED':
        return { kind: 'fail', error: `${name} failed on the node: ${commandMessage(command)}` };
      case 'SUCCEEDED':
        return { kind: 'resume', internal: { clean_step_done: true } };
    }
  }

  /** The write's start: the image (converted first when qcow2) and the config drive to the agent. */
  private async startWrite(task: DriverTask, endpoint: AgentEndpoint): Promise<AgentProgress> {
    const source = this.imageSource(task);
    let staged: StagedRawImage | undefined;
    if (source.format !== 'raw') {
      const status = this.stage(task, source);
      if (status.state === 'staging') return { kind: 'wait' };
      if (status.state === 'failed') return { kind: 'fail', error: `write_image: the conductor could not convert the ${source.format} image: ${status.error}` };
      staged = status.image;
    }
    const imageInfo = directImageInfo(task, staged);
    let drive: string | null;
    try {
      drive = await configDrive(task);
    } catch (err) {
      return { kind: 'fail', error: `write_image: the config drive could not be built: ${(err as Error).message}` };
    }
    let started;
    try {
      started = await this.client.run(endpoint, 'standby.prepare_image', { image_info: imageInfo, configdrive: drive }, { wait: false, ...(task.signal ? { signal: task.signal } : {}) });
    } catch (err) {
      return { kind: 'fail', error: `write_image: the agent did not take standby.prepare_image: ${(err as Error).message}` };
    }
    if (started.command_status === 'FAILED') return { kind: 'fail', error: `write_image failed on the node: ${commandMessage(started)}` };
    task.logger.info({ command: started.id, url: imageInfo.urls[0] }, 'the agent is writing the image');
    const next: DirectDeployState = { phase: 'writing', command: started.id };
    if (started.command_status === 'SUCCEEDED') return this.written(next, started);
    return { kind: 'wait', internal: { [DIRECT_DEPLOY_KEY]: next, deploy_step: WRITE_IMAGE_STEP } };
  }

  private written(state: DirectDeployState, command: { command_result: Record<string, unknown> | null }): AgentProgress {
    const result = command.command_result?.result;
    const next: DirectDeployState = { phase: 'written', command: state.command, ...(typeof result === 'string' ? { result: result.slice(0, 1024) } : {}) };
    return { kind: 'resume', internal: { [DIRECT_DEPLOY_KEY]: next, deploy_step: {} } };
  }

  /** The image source, checked; a qcow2 one needs this conductor's converter. */
  private imageSource(task: DriverTask): DirectImageSource {
    const source = directImageSource(task);
    if (source.format !== 'raw' && this.options.images === undefined) {
      throw new InvalidParameterValue('instance_info.image_disk_format', `${source.format} needs a conductor that converts and serves images over HTTP ([deploy] http_root with an HTTP boot server or http_url); give a raw image`);
    }
    return source;
  }

  private stage(task: DriverTask, source: DirectImageSource, retry = false): ImageStageStatus {
    return this.options.images!.stage(task.node.uuid, { url: source.url.href, checksum: `${source.algo}:${source.value}` }, retry);
  }

  /** After the image is on the disk: flush it, power off, boot from the disk for good, power on. */
  private async bootInstance(task: DriverTask): Promise<DeployOutcome> {
    const { boot, management, power } = task.driver;
    await this.options.images?.release(task.node.uuid);
    const url = task.node.driver_internal_info?.agent_url;
    // UEFI: the firmware gets a boot entry for the image's loader, as Ironic asks IPA for one
    // (a loader outside the fallback path boots only through it). No agent: nothing to ask, and
    // the deploy cannot be finished honestly.
    if (nodeBootMode(task.node) === 'uefi') {
      if (typeof url !== 'string' || !task.agentToken) throw new Error('the node boots in UEFI mode, but its agent is gone before it could register the boot entry');
      await this.installBootloader(task, { url, token: task.agentToken });
    }
    if (typeof url === 'string' && task.agentToken) {
      // The agent wrote with O_DIRECT and fsynced, so this is belt and braces: a power-off cannot
      // lose what the page cache held. An agent that is gone already does not stop the deploy.
      try {
        const synced = await this.client.run({ url, token: task.agentToken }, 'standby.sync', {}, { wait: true, ...(task.signal ? { signal: task.signal } : {}) });
        if (synced.command_status === 'FAILED') task.logger.warn({ error: commandMessage(synced) }, 'the agent could not sync the disk; powering off anyway (the image was fsynced when written)');
      } catch (err) {
        task.logger.warn({ err: (err as Error).message }, 'could not reach the agent to sync the disk; powering off anyway (the image was fsynced when written)');
      }
    }
    await power.setPowerState(task, 'power off');
    // The deploy ramdisk's entry gives way to one that boots the local disk (firmware that tries
    // the network first still ends on the disk); the BMC is told disk too.
    await boot.prepareLocalBoot(task);
    await management.setBootDevice(task, 'disk', true);
    await power.setPowerState(task, 'power on');
    return 'done';
  }

  /**
   * Ironic's `configure_local_boot` for a whole-disk image in UEFI mode: the partition table's EFI
   * system partition from the agent (`standby.get_partition_uuids`), then `image.install_bootloader`
   * naming it; the agent finds the loader and writes the entry. Its failure fails the deploy.
   */
  private async installBootloader(task: DriverTask, agent: AgentEndpoint): Promise<void> {
    const signal = task.signal ? { signal: task.signal } : {};
    const table = await this.client.run(agent, 'standby.get_partition_uuids', {}, { wait: true, ...signal });
    if (table.command_status !== 'SUCCEEDED') throw new Error(`the agent could not read the partition table: ${commandMessage(table)}`);
    const esp = table.command_result?.['efi system partition uuid'];
    if (typeof esp !== 'string' || esp === '') {
      throw new Error('the node boots in UEFI mode, but the image has no EFI system partition (a GPT entry of type EFI system, or an MBR one of type 0xef): it cannot boot from the disk');
    }
    const installed = await this.client.run(agent, 'image.install_bootloader', { root_uuid: null, efi_system_part_uuid: esp, prep_boot_part_uuid: null, target_boot_mode: 'uefi' }, { wait: true, ...signal });
    if (installed.command_status !== 'SUCCEEDED') throw new Error(`install_bootloader failed on the node: ${commandMessage(installed)}`);
    const said = installed.command_result?.result;
    task.logger.info({ result: typeof said === 'string' ? said.slice(0, 512) : null }, 'the agent registered the UEFI boot entry');
  }

  async tearDown(task: DriverTask): Promise<void> {
    await this.options.images?.release(task.node.uuid);
    await task.driver.power.setPowerState(task, 'power off');
    await task.driver.boot.cleanUpInstance(task);
  }

  async cleanUp(task: DriverTask): Promise<void> {
    await this.options.images?.release(task.node.uuid);
    await task.driver.boot.cleanUpRamdisk(task);
  }

  /**
   * Rebuilds the deploy ramdisk's boot files where the node boots it (a deploy waiting for its
   * agent). An active node boots from its own disk: its owner keeps only the entry that hands the
   * network boot over to that disk — no image moves with it.
   */
  async takeOver(task: DriverTask): Promise<void> {
    switch (bootNeed(task.node.provision_state ?? '')) {
      case 'deploy':
      case 'rescue':
        await task.driver.boot.prepareRamdisk(task, agentRamdiskParams(this.apiUrl(), task.node.provision_state, this.options.inspectionKernelParams));
        return;
      case 'instance':
        await task.driver.boot.prepareLocalBoot(task);
        return;
      case 'none':
        return;
    }
  }

  private apiUrl(): string {
    return requireAgentApiUrl(this.options.apiUrl());
  }

  private endpoint(task: DriverTask, agent: AgentContact): AgentEndpoint {
    if (!task.agentToken) throw new InvalidParameterValue('agent_token', 'the node has no agent session; the agent must look up first');
    return { url: agent.url, token: task.agentToken };
  }
}

/** Longest `instance_info.configdrive` text: 64 MiB gzipped and base64-encoded, with room. */
const MAX_CONFIG_DRIVE_TEXT = 96 * 1024 * 1024;

/**
 * The config drive the agent writes: `instance_info.configdrive` as the API stores it — gzipped
 * base64 text or its http(s) URL, passed on as it is, or the JSON form (an object: API 1.56, or
 * set in instance_info), built here into that text — or null. With `build` false the JSON form is
 * only checked (validate).
 */
async function configDrive(task: DriverTask, build = true): Promise<string | null> {
  const value = task.node.instance_info?.configdrive;
  if (value === undefined || value === null || value === '') return null;
  if (typeof value === 'object') {
    if (!build) {
      checkConfigDriveSpec(value, 'instance_info.configdrive');
      return null;
    }
    return buildConfigDrive({ uuid: task.node.uuid, name: task.node.name ?? null }, value, { field: 'instance_info.configdrive' });
  }
  const text = optionalString({ name: 'instance_info', value: task.node.instance_info }, 'configdrive');
  if (text === undefined) return null;
  if (text.length > MAX_CONFIG_DRIVE_TEXT) throw new InvalidParameterValue('instance_info.configdrive', `is longer than ${MAX_CONFIG_DRIVE_TEXT} characters (a config drive is at most 64 MiB)`);
  return text;
}

/** An agent's error as one line for `last_error`. */
function commandMessage(result: { command_error: { type: string; message: string; details: string } | null }): string {
  const e = result.command_error;
  if (e === null) return 'the agent gave no reason';
  const text = [e.message, e.details].filter((p) => p !== '' && p !== undefined).join(': ');
  return `${e.type}: ${text}`.slice(0, 4096);
}
