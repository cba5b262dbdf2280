/**
 * The conductor process (DESIGN §5): membership, heartbeats, live rings, lock hygiene and a graceful
 * stop. The boot services, the drivers, node operations, the reconciler and the power sync hang off
 * it; each is built once, in `start()`, in the order they depend on each other (the drivers need the
 * boot environment and its HTTP boot URL, which exist only once the boot servers are bound).
 *
 * Start: bind the RPC endpoint (its URL is published), register (refused if a live conductor has
 * this hostname), release this host's stale locks from a previous life, join the cluster view
 * (itself always included), then heartbeat with the database clock.
 * Stop: ProxyDHCP answers end first, offline at once (others' rings drop it within one
 * notification), keep heartbeating while locked work finishes (up to `graceful_shutdown_timeout`),
 * release its locks; in dnsmasq files mode retire its DHCP entries of each node right after the
 * node's new owner wrote its own (`stop-hand-off.ts`), with its boot servers still up; let the boot
 * servers finish what machines are fetching (`boot/linger.ts`, a few seconds at most); leave.
 */
import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { installListenerAuth } from '../auth/listener-auth.js';
import { conductorListenerRoutes, prepareRpcCredentials, rpcServerTls } from '../auth/rpc-auth.js';
import { conductorRings } from '../cluster/conductor-rings.js';
import type { ConductorRings } from '../cluster/conductor-rings.js';
import { releaseDeadReservations } from '../cluster/dead-locks.js';
import { assertNotRunning, heartbeat, markOffline, registerConductor } from '../cluster/membership.js';
import type { ConductorRegistration } from '../cluster/membership.js';
import { releaseReservationsOf } from '../cluster/reservations.js';
import { recordDepartures, recordRingEvent } from '../cluster/ring-events.js';
import { TaskTracker } from '../cluster/task.js';
import { installErrorHandling } from '../common/http-errors.js';
import { listenFastify } from '../common/listen.js';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import type { Store } from '../db/connect.js';
import { kernelParamWords } from '../drivers/direct/agent-ramdisk.js';
import { createDriverRegistry } from '../drivers/index.js';
import type { DriverRegistry } from '../drivers/index.js';
import { AllocationWorker } from './allocations.js';
import { bootFilesRoute } from './boot-files-rpc.js';
import { startBootServices } from './boot-services.js';
import { DiscoveryBoot } from './discovery-boot.js';
import { inspectorSettings } from './inspection.js';
import type { BootServices, OptionalServers } from './boot-services.js';
import { ConductorMetrics } from './metrics.js';
import { NodeOperations } from './node-operations.js';
import { PowerSync } from './power-sync.js';
import { WaitTimeouts } from './wait-timeouts.js';
import { Reconciler } from './reconciler.js';
import { rpcRoutes } from './rpc.js';
import { retireHandedOff } from './stop-hand-off.js';

/**
 * How long a stopping conductor waits at least, after releasing its locks, for the new owners of
 * its nodes to write their DHCP entries before it retires its own (ms); `graceful_shutdown_timeout`
 * from the start of the stop bounds it otherwise.
 */
const HAND_OFF_MIN_WAIT_MS = 5000;

export interface ConductorDeps {
  store: Store;
  config: Config;
  logger: Logger;
  /** The hardware types this conductor runs; by default the built-in catalogue on this conductor's boot environment. */
  drivers?: DriverRegistry;
  /** Boot servers that may be skipped with a warning when their address cannot be bound. */
  optionalServers?: OptionalServers;
  /** Export process metrics (CPU, memory, event loop) on `/metrics`; the CLI turns it on. */
  processMetrics?: boolean;
}

/** What a conductor reports about itself on its RPC endpoint (`GET /v1/status`). */
export interface ConductorStatus {
  hostname: string;
  id: number;
  conductor_group: string;
  state: 'running' | 'stopping' | 'stopped';
  ring_version: number;
  /** Live members per group, as this conductor sees them. */
  rings: Record<string, string[]>;
  active_tasks: number;
}

/** What a conductor builds once its boot services run. */
interface StartedParts {
  drivers: DriverRegistry;
  operations: NodeOperations;
  reconciler: Reconciler;
  powerSync: PowerSync;
  waitTimeouts: WaitTimeouts;
  /** The allocating process for the allocations the ring gives this conductor. */
  allocations: AllocationWorker;
}

export class Conductor {
  readonly hostname: string;
  readonly group: string;
  /** The conductors' live rings, itself always included while it runs. */
  readonly view: ConductorRings;
  readonly tracker = new TaskTracker();
  readonly metrics: ConductorMetrics;
  /** What `start()` builds, once; undefined before. */
  private parts: StartedParts | undefined;
  private boot: BootServices | undefined;
  private conductorId: number | undefined;
  private rpc: FastifyInstance | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeatFailing = false;
  private state: ConductorStatus['state'] = 'running';
  private stopping: Promise<void> | undefined;
  private unsubscribe: (() => void) | undefined;
  /** Auto-discovery's PXE side here; built when membership starts. */
  private discovery: DiscoveryBoot | undefined;
  private readonly log: Logger;
  rpcUrl = '';

  constructor(private readonly deps: ConductorDeps) {
    const { config } = deps;
    this.hostname = config.DEFAULT.host;
    this.group = config.conductor.conductor_group;
    this.log = deps.logger.child({ component: 'conductor', host: this.hostname });
    this.view = conductorRings(deps.store, config.conductor, {
      // SQLite has no notifications: polling twice a second keeps a graceful stop visible within 1 s.
      pollIntervalMs: deps.store.engine === 'sqlite' ? 500 : 1000,
      logger: this.log,
    });
    this.metrics = new ConductorMetrics({ conductor: this.hostname, conductor_group: this.group }, { processMetrics: deps.processMetrics ?? false });
  }

  /** Where nodes reach this conductor's boot servers (null when one is off). */
  get bootEndpoints(): { tftp: string | null; http: string | null; proxyDhcp: string | null } {
    return { tftp: this.boot?.tftpAddress ?? null, http: this.boot?.httpUrl ?? null, proxyDhcp: proxyDhcpEndpoint(this.proxyDhcpAddress) };
  }

  /** Where this conductor's ProxyDHCP responder listens, or null when it does not run (off, unbound, stopped). */
  get proxyDhcpAddress(): { host: string; dhcpPort: number; pxePort: number } | null {
    return this.state === 'running' ? (this.boot?.proxyDhcp?.address() ?? null) : null;
  }

  /** The conductor's row id; stable across restarts. */
  get id(): number {
    if (this.conductorId === undefined) throw new Error('conductor not started');
    return this.conductorId;
  }

  status(): ConductorStatus {
    const rings: Record<string, string[]> = {};
    for (const group of this.view.groups()) rings[group] = this.view.ring(group)?.hosts ?? [];
    return {
      hostname: this.hostname,
      id: this.id,
      conductor_group: this.group,
      state: this.state,
      ring_version: this.view.version,
      rings,
      active_tasks: this.tracker.active,
    };
  }

  /** The node operations (behind the RPC endpoint), the reconciler and the power sync. */
  get operations(): NodeOperations {
    return this.started().operations;
  }

  get reconciler(): Reconciler {
    return this.started().reconciler;
  }

  /** The periodic power-state sync of the nodes this conductor owns. */
  get powerSync(): PowerSync {
    return this.started().powerSync;
  }

  /** The hardware types this conductor runs. */
  get drivers(): DriverRegistry {
    return this.started().drivers;
  }

  private started(): StartedParts {
    if (!this.parts) throw new Error('conductor not started');
    return this.parts;
  }

  /** Builds the drivers on the boot environment, then what uses them; once, after the boot services. */
  private buildParts(boot: BootServices): StartedParts {
    const { config, store } = this.deps;
    const drivers =
      this.deps.drivers ??
      createDriverRegistry({
        bootEnvironment: boot.environment,
        agentApiUrl: config.deploy.agent_api_url || config.api.public_endpoint || null,
        agentClient: { timeoutSeconds: config.agent.command_timeout, attempts: config.agent.max_command_attempts },
        ...(boot.instanceImages ? { instanceImages: boot.instanceImages } : {}),
        fastTrack: { enabled: config.deploy.fast_track, timeoutSeconds: config.deploy.fast_track_timeout },
        eraseMetadataPriority: config.deploy.erase_devices_metadata_priority,
        eraseDevices: { priority: config.deploy.erase_devices_priority, iterations: config.deploy.shred_random_overwrite_iterations, zeroize: config.deploy.shred_final_overwrite_with_zeros },
        inspectorPowerOff: config.inspector.power_off,
        inspectionKernelParams: kernelParamWords(config.inspector.extra_kernel_params),
        // Without an HTTP boot URL (no HTTP boot server here and no [deploy] http_url), iPXE cannot
        // fetch its configs: PXE is the default then.
        ...(boot.httpUrl ? {} : { defaultInterfaces: { boot: 'pxe' } }),
      });
    const operations = new NodeOperations({
      store,
      host: this.hostname,
      tracker: this.tracker,
      drivers,
      logger: this.log,
      automatedClean: config.conductor.automated_clean,
      inspector: inspectorSettings(config),
      conductorId: () => this.conductorId,
      // Called only once work runs, which is after the reconciler below is built.
      bootStateMade: (uuid, stamp, ports) => reconciler.bootStateMade(uuid, stamp, ports),
      retry: { attempts: config.conductor.node_locked_retry_attempts, intervalMs: config.conductor.node_locked_retry_interval * 1000 },
    });
    const reconciler = new Reconciler({
      store,
      hostname: this.hostname,
      group: this.group,
      conductorId: () => this.id,
      view: this.view,
      drivers,
      boot: boot.environment,
      tracker: this.tracker,
      resume: (uuid) => operations.resume(uuid),
      logger: this.log,
      metrics: this.metrics,
      replicas: config.conductor.replicas,
      workers: config.conductor.sync_local_state_workers,
      intervalSeconds: config.conductor.sync_local_state_interval,
      changePollMs: store.engine === 'sqlite' ? 500 : 1000,
    });
    const powerSync = new PowerSync({
      store,
      hostname: this.hostname,
      group: this.group,
      view: this.view,
      drivers,
      tracker: this.tracker,
      logger: this.log,
      metrics: this.metrics,
      intervalSeconds: config.conductor.sync_power_state_interval,
      force: config.conductor.force_power_state_during_sync,
      maxRetries: config.conductor.power_state_sync_max_retries,
      workers: config.conductor.sync_power_state_workers,
    });
    const c = config.conductor;
    const waitTimeouts = new WaitTimeouts({
      store,
      hostname: this.hostname,
      group: this.group,
      view: this.view,
      logger: this.log,
      intervalSeconds: c.check_provision_state_interval,
      timeouts: { 'wait call-back': c.deploy_callback_timeout, 'clean wait': c.clean_callback_timeout, 'inspect wait': c.inspect_wait_timeout, 'rescue wait': c.rescue_callback_timeout },
      fail: (uuid, state, seconds) => operations.failWaitTimeout(uuid, state, seconds),
    });
    const allocations = new AllocationWorker({
      store,
      hostname: this.hostname,
      view: this.view,
      logger: this.log,
      conductorId: () => this.conductorId,
      // PostgreSQL announces new allocations; the poll there only backs notifications up.
      pollMs: store.engine === 'sqlite' ? 500 : 5000,
      retry: { attempts: config.conductor.node_locked_retry_attempts, intervalMs: config.conductor.node_locked_retry_interval * 1000 },
    });
    return { drivers, operations, reconciler, powerSync, waitTimeouts, allocations };
  }

  async start(): Promise<void> {
    const { config, store } = this.deps;
    // First: a conductor that would expose an unauthenticated RPC endpoint does not start at all.
    prepareRpcCredentials(config, this.log);
    await assertNotRunning(store, this.hostname, config.conductor.heartbeat_timeout);
    this.boot = await startBootServices(config, this.log, this.deps.optionalServers);
    const boot = this.boot;
    this.metrics.watchTftp(() => boot.tftpStats());
    this.metrics.watchHttpBoot(() => boot.httpBootStats());
    this.metrics.watchProxyDhcp(() => boot.proxyDhcpStats());
    try {
      this.parts = this.buildParts(boot);
      await this.startMembership();
    } catch (err) {
      await this.boot.close();
      throw err;
    }
  }

  private async startMembership(): Promise<void> {
    const { store, config } = this.deps;
    this.rpc = this.buildRpc();
    const url = await listenFastify(this.rpc, config.conductor.rpc_address, 'conductor RPC endpoint', '--rpc-address or [conductor] rpc_address');
    // Published as https:// under use_ssl: callers take the scheme from the conductor row.
    this.rpcUrl = config.json_rpc.use_ssl ? url.replace(/^http:/, 'https:') : url;
    try {
      this.conductorId = await registerConductor(store, this.registration(), config.conductor.heartbeat_timeout);
      this.recordRingEvent(() => recordRingEvent(store, { kind: 'joined', conductorGroup: this.group, hostname: this.hostname }));
      const released = await releaseReservationsOf(store, this.hostname, { by: this.hostname, reason: 'conductor restarted' });
      if (released.length > 0) this.log.warn({ nodes: released.length }, 'released locks left by this conductor before it restarted');
      this.view.setSelf({ name: this.hostname, group: this.group, weight: 1 });
      this.unsubscribe = this.view.subscribe((change) => {
        this.discovery?.ringChanged();
        this.recordRingEvent(() => recordDepartures(store, change, this.hostname));
        // The reconciler passes on this ring change at once; nodes a dead conductor still holds stay
        // pending in that pass, so once their locks are released here, one more pass takes them over.
        if (change.removed.length > 0) void this.releaseDeadLocks().then((n) => n > 0 && this.reconciler.trigger('dead locks released'));
      });
      await this.view.start();
      // In the background: the discovery ramdisk may take a while to fetch, and a conductor's start
      // (its heartbeat) must not wait for it. It never throws; it logs why it does not answer.
      void this.discoveryBoot().start();
      await this.reconciler.start();
      this.powerSync.start();
      this.started().waitTimeouts.start();
      await this.started().allocations.start();
    } catch (err) {
      await this.rpc.close();
      throw err;
    }
    this.heartbeatTimer = setInterval(() => void this.beat(), config.conductor.heartbeat_interval * 1000);
    this.log.info(
      { id: this.conductorId, group: this.group, rpc: this.rpcUrl, tftp: this.boot?.tftpAddress, http: this.boot?.httpUrl, ring_version: this.view.version },
      'conductor started',
    );
  }

  private registration(): ConductorRegistration {
    return {
      hostname: this.hostname,
      group: this.group,
      drivers: this.drivers.driverNames(),
      interfaces: this.drivers.registrations(),
      rpcUrl: this.rpcUrl,
      tftpAddress: this.boot?.tftpAddress ?? null,
      httpUrl: this.boot?.httpUrl ?? null,
      proxyDhcpAddress: proxyDhcpEndpoint(this.boot?.proxyDhcp?.address() ?? null),
    };
  }

  /** One heartbeat, then a sweep for locks of dead conductors. Failures are logged, never fatal. */
  private async beat(): Promise<void> {
    const { store, config } = this.deps;
    try {
      const ok = await heartbeat(store, this.id);
      if (!ok && this.state === 'running') {
        this.log.warn('conductor row is gone; registering again');
        this.conductorId = await registerConductor(store, this.registration(), config.conductor.heartbeat_timeout);
      }
      if (this.heartbeatFailing) this.log.info('heartbeats resumed');
      this.heartbeatFailing = false;
      if ((await this.releaseDeadLocks()) > 0) this.reconciler.trigger('dead locks released');
    } catch (err) {
      if (!this.heartbeatFailing) this.log.error({ err: (err as Error).message }, 'heartbeat failed; retrying every interval');
      this.heartbeatFailing = true;
    }
  }

  /** Releases the locks of dead conductors; returns how many nodes were released. */
  private async releaseDeadLocks(): Promise<number> {
    try {
      const released = await releaseDeadReservations(this.deps.store, this.deps.config.conductor.heartbeat_timeout, this.hostname);
      if (released.length > 0) this.log.warn({ nodes: released.length, sample: released.slice(0, 10) }, 'released locks held by dead conductors');
      return released.length;
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'could not release locks of dead conductors');
      return 0;
    }
  }

  private discoveryBoot(): DiscoveryBoot {
    const boot = this.boot;
    if (boot === undefined) throw new Error('boot services are not started');
    this.discovery = new DiscoveryBoot({
      config: this.deps.config,
      store: this.deps.store,
      boot,
      hostname: this.hostname,
      ringOwner: (group, key) => this.view.ring(group)?.owner(key),
      log: this.log,
    });
    return this.discovery;
  }

  /** Writes a ring event for the take-over timeline in the background; a lost one is logged, never fatal. */
  private recordRingEvent(write: () => Promise<unknown>): void {
    write().catch((err: unknown) => this.log.debug({ err: (err as Error).message }, 'could not record a ring event'));
  }

  /** Graceful stop; idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    const { store, config } = this.deps;
    const stopStarted = Date.now();
    this.state = 'stopping';
    // First of all, this conductor stops answering PXE clients: from here on its nodes are the
    // survivors' to answer, and two answers at once make iPXE take whichever came last.
    this.discovery?.stop();
    await this.boot?.proxyDhcp?.close();
    // No new take-overs or clean-ups (a pass in flight stops at its next node): this conductor's
    // files keep serving until the others took over. Going offline does not wait for it.
    const halted = Promise.all([this.parts?.reconciler.stop(), this.parts?.powerSync.stop(), this.parts?.waitTimeouts.stop(), this.parts?.allocations.stop()]);
    this.tracker.drain();
    this.log.info('stopping: going offline');
    try {
      await markOffline(store, this.id, this.hostname);
      // Awaited: the store closes when the stop is done.
      await recordRingEvent(store, { kind: 'left', conductorGroup: this.group, hostname: this.hostname }).catch((err: unknown) => this.log.debug({ err: (err as Error).message }, 'could not record a ring event'));
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'could not mark this conductor offline');
    }
    await halted;
    this.view.setSelf(null);
    await this.view.refresh();
    // From now on the survivors take this conductor's nodes over; their DHCP entries replace ours.
    const locks: { releasedAt?: number } = {};
    const handOff = this.handOffDhcp(() =>
      locks.releasedAt === undefined ? Infinity : Math.max(stopStarted + config.conductor.graceful_shutdown_timeout * 1000, locks.releasedAt + HAND_OFF_MIN_WAIT_MS),
    );
    if (this.tracker.active > 0) {
      this.log.info({ tasks: this.tracker.tasks() }, 'waiting for locked work to finish');
      const idle = await this.tracker.waitIdle(config.conductor.graceful_shutdown_timeout * 1000);
      if (!idle) this.log.warn({ tasks: this.tracker.tasks() }, 'graceful_shutdown_timeout passed; releasing the locks of unfinished work');
    }
    try {
      await releaseReservationsOf(store, this.hostname, { by: this.hostname, reason: 'conductor stopped' });
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'could not release this conductor\'s locks; survivors release them when its heartbeat expires');
    }
    locks.releasedAt = Date.now();
    await handOff;
    // Nothing names this conductor any more; a boot already on its way here finishes here.
    const lingered = await this.boot?.linger();
    if (lingered && lingered.waitedMs > 0) this.log.info(lingered, 'boot servers served on after the hand-off');
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.unsubscribe?.();
    await this.view.stop();
    await this.rpc?.close();
    await this.boot?.close();
    this.state = 'stopped';
    this.log.info('conductor stopped');
  }

  /** Retires this conductor's DHCP entries as the new owners take its nodes (dnsmasq files mode only). */
  private async handOffDhcp(deadline: () => number): Promise<void> {
    const boot = this.boot?.environment;
    if (boot === undefined || !boot.writesDhcp || this.conductorId === undefined) return;
    try {
      await retireHandedOff({
        store: this.deps.store,
        boot,
        hostname: this.hostname,
        conductorId: this.conductorId,
        group: this.group,
        view: this.view,
        deadline,
        log: this.log,
        pollMs: this.deps.store.engine === 'sqlite' ? 100 : 200,
      });
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'could not retire the DHCP entries of nodes handed off');
    }
  }

  private buildRpc(): FastifyInstance {
    const tls = rpcServerTls(this.deps.config);
    // The https server type differs only in its socket; the routes and hooks are the same.
    const app = Fastify({
      loggerInstance: this.log.child({ component: 'rpc' }) as FastifyBaseLogger,
      disableRequestLogging: true,
      bodyLimit: 1024 * 1024,
      ...(tls ? { https: tls } : {}),
    }) as unknown as FastifyInstance;
    installErrorHandling(app);
    // Every route, RPC or not, passes the gate; HMAC signs the body, so it is kept raw.
    installListenerAuth(app, conductorListenerRoutes(this.deps.config), { keepRawBody: true });
    app.get('/v1/status', async () => this.status());
    app.get('/metrics', async (_request, reply) => {
      reply.header('content-type', this.metrics.registry.contentType);
      return this.metrics.registry.metrics();
    });
    app.get('/v1/reconcile', async () => this.reconciler.last);
    bootFilesRoute(app, { store: this.deps.store, config: this.deps.config, hostname: this.hostname, group: this.group, conductorId: () => this.conductorId, ringOwner: (uuid) => this.view.ring(this.group)?.owner(uuid) });
    rpcRoutes(app, this.operations);
    return app;
  }
}

/** A ProxyDHCP responder's address as the conductor row and `ironring up` show it: `host:dhcpPort+pxePort`. */
function proxyDhcpEndpoint(address: { host: string; dhcpPort: number; pxePort: number } | null): string | null {
  return address === null ? null : `${address.host}:${address.dhcpPort}+${address.pxePort}`;
}
