/**
 * The compute service process (`ironring compute`, DESIGN §7): one per host and cell.
 *
 * Start: resolve its cell from the API database, register its `services` row (upsert by host and
 * binary, refused while a live process holds the host), heartbeat `last_seen_up` by the database
 * clock every `report_interval`. Then, on every `update_resources_interval` and at once whenever the
 * set of live compute services of the cell changes, list the nodes through the bare-metal REST API
 * and bring `compute_nodes` and the instances' hosts in line with the ownership plan
 * (`ownership.ts`). Instance work (deploy, undeploy) runs on its own short loop, woken at once by a
 * notification on PostgreSQL.
 *
 * Stop (SIGTERM): its row is marked down at once, so the other services take its nodes (and
 * instances) on their next membership check rather than after `service_down_time`.
 */
import { findCell, isCell0 } from '../cells/cells.js';
import type { CellMapping } from '../cells/cells.js';
import type { CellStores } from '../cells/cell-stores.js';
import type { Logger } from '../common/logger.js';
import { InvalidParameter } from '../common/errors.js';
import { SerialWork } from '../common/serial-work.js';
import type { SerialWorkStats } from '../common/serial-work.js';
import type { Store } from '../db/connect.js';
import { requireSchema } from '../db/migrate.js';
import type { Listener } from '../db/notifications.js';
import type { RingMode } from '../ring/index.js';
import type { BaremetalClient } from './baremetal-client.js';
import { applyPlan, readComputeNodes, readPlacedInstances } from './compute-nodes.js';
import type { AppliedPlan } from './compute-nodes.js';
import { INSTANCES_CHANNEL } from './instances.js';
import { InstanceWorker } from './instance-worker.js';
import { planFor } from './ownership.js';
import { serviceRing, serviceRings } from './service-rings.js';
import type { ServiceRings } from './service-rings.js';
import { COMPUTE_BINARY, SERVICES_CHANNEL, markServiceDown, registerService, serviceHeartbeat } from './services.js';

export interface ComputeServiceOptions {
  host: string;
  /** Name or uuid of the cell. */
  cell: string;
  api: Store;
  cells: CellStores;
  baremetal: BaremetalClient;
  logger: Logger;
  reportInterval: number;
  serviceDownTime: number;
  updateResourcesInterval: number;
  ringMode?: RingMode;
  /** Milliseconds between membership checks (default 500 on SQLite, 1000 on PostgreSQL). */
  membershipPollMs?: number;
  /** Milliseconds between instance work passes (default 1000). */
  instancePollMs?: number;
}

/** What a compute service reports about itself. */
export interface ComputeServiceStatus {
  host: string;
  cell: string;
  serviceId: number;
  liveServices: string[];
  nodes: number;
  lastPass: AppliedPlan | null;
  /** Resource passes and instance passes: runs and failures (a failed pass is retried after a back-off). */
  work: { resources: SerialWorkStats; instances: SerialWorkStats };
}

export class ComputeService {
  readonly host: string;
  private cell: CellMapping | undefined;
  private store: Store | undefined;
  private serviceId: number | undefined;
  private worker: InstanceWorker | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly listeners: Listener[] = [];
  /** The cell's live ring of compute services, this one always in it while it runs. */
  private rings: ServiceRings | undefined;
  private owned = 0;
  private lastPass: AppliedPlan | null = null;
  /** Resource passes: every `update_resources_interval`, and at once on a membership change. */
  private readonly resources: SerialWork;
  /** Instance passes: every `instancePollMs`, on a notification, and soon again while instances are in flight. */
  private readonly instances: SerialWork;
  private stopped = false;
  private readonly log: Logger;

  constructor(private readonly options: ComputeServiceOptions) {
    this.host = options.host;
    this.log = options.logger.child({ component: 'compute', host: options.host });
    this.resources = new SerialWork({
      name: 'compute resource update',
      run: () => this.resourcePass(),
      logger: this.log,
      intervalMs: options.updateResourcesInterval * 1000,
    });
    this.instances = new SerialWork({
      name: 'instance pass',
      run: () => this.instancePass(),
      logger: this.log,
      intervalMs: options.instancePollMs ?? 1000,
      // Deploys in flight wait on these passes: back off from the poll interval, but not for long.
      backoff: { initialMs: options.instancePollMs ?? 1000, maxMs: 30_000 },
    });
  }

  get cellMapping(): CellMapping {
    if (!this.cell) throw new Error('compute service not started');
    return this.cell;
  }

  status(): ComputeServiceStatus {
    return {
      host: this.host,
      cell: this.cell?.name ?? '',
      serviceId: this.serviceId ?? 0,
      liveServices: (this.rings?.members() ?? []).map((m) => m.host).sort(),
      nodes: this.owned,
      lastPass: this.lastPass,
      work: { resources: this.resources.stats(), instances: this.instances.stats() },
    };
  }

  async start(): Promise<void> {
    const { options } = this;
    const cell = await findCell(options.api, options.cell);
    if (isCell0(cell)) throw new InvalidParameter('cell0 holds no compute services (it keeps instances that were never scheduled); give another --cell');
    this.cell = cell;
    const store = await options.cells.get(cell);
    // A cell database behind this code's schema (instance tokens, faults…) is named, not a SQL error.
    await requireSchema(store, ['cell']);
    this.store = store;
    this.serviceId = await registerService(store, { host: this.host, binary: COMPUTE_BINARY }, options.serviceDownTime);
    await store.notify(SERVICES_CHANNEL, `up:${this.host}`);
    this.worker = new InstanceWorker({ host: this.host, cell: store, api: options.api, baremetal: options.baremetal, logger: this.log });
    this.log.info({ cell: cell.name, cellUuid: cell.uuid, serviceId: this.serviceId }, 'compute service registered');

    this.rings = serviceRings(store, {
      selfHost: this.host,
      downTime: options.serviceDownTime,
      pollIntervalMs: options.membershipPollMs ?? (store.engine === 'sqlite' ? 500 : 1000),
      ...(options.ringMode ? { ringMode: options.ringMode } : {}),
      logger: this.log,
    });
    await this.rings.start();
    // A change of the live services moves nodes: a resource update at once.
    this.rings.subscribe(() => void this.updateResources());
    await this.updateResources();

    const every = (ms: number, fn: () => Promise<unknown>) => {
      const timer = setInterval(() => void fn().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'periodic task failed')), ms);
      this.timers.push(timer);
    };
    every(options.reportInterval * 1000, () => this.heartbeat());
    this.resources.start();
    this.instances.start();
    const instances = await store.listen(INSTANCES_CHANNEL, {
      onMessage: (payload) => {
        if (payload.toLowerCase() === this.host.toLowerCase()) void this.workInstances();
      },
      onReconnect: () => void this.workInstances(),
    });
    if (instances) this.listeners.push(instances);
    void this.workInstances();
  }

  private async heartbeat(): Promise<void> {
    if (this.stopped || !this.store || this.serviceId === undefined) return;
    if (!(await serviceHeartbeat(this.store, this.serviceId))) {
      this.log.warn('service row is gone; registering again');
      this.serviceId = await registerService(this.store, { host: this.host, binary: COMPUTE_BINARY }, this.options.serviceDownTime);
    }
  }

  /**
   * One resource pass, serialised: a request during a pass runs one more pass after it. Never
   * rejects: a failed pass (an unreadable cell database) is logged, counted and retried.
   */
  updateResources(): Promise<void> {
    return this.resources.request();
  }

  private async resourcePass(): Promise<void> {
    if (this.stopped || !this.store || !this.rings) return;
    const started = Date.now();
    let nodes;
    try {
      nodes = await this.options.baremetal.listNodes(['uuid', 'resource_class', 'provision_state', 'instance_uuid', 'maintenance']);
    } catch (err) {
      // Without the node list nothing is known about the nodes: change nothing.
      this.log.warn({ err: (err as Error).message }, 'cannot list nodes; compute nodes left as they are');
      return;
    }
    const [computeNodes, instances] = await Promise.all([readComputeNodes(this.store), readPlacedInstances(this.store)]);
    // Membership read *after* the compute nodes: a service seen holding a node registered before it
    // took it, so it is in this list unless it really is down. With the list of the last poll, a
    // service that joined a moment ago looked dead here and had its nodes taken straight back.
    await this.rings.refresh();
    if (this.stopped) return;
    const plan = planFor(this.host, {
      ring: serviceRing(this.rings),
      nodes: nodes.map((n) => ({ uuid: n.uuid, resourceClass: n.resource_class ?? null })),
      computeNodes,
      instances,
    });
    if (this.stopped) return;
    const applied = await applyPlan(this.store, this.host, plan);
    this.owned = plan.owned;
    this.lastPass = applied;
    const changed = applied.created + applied.takenOver + applied.adopted + applied.removed;
    if (changed > 0) {
      this.log.info({ ...applied, owned: plan.owned, ms: Date.now() - started }, 'compute nodes updated');
      if (applied.adopted > 0) void this.workInstances();
    } else {
      this.log.debug({ owned: plan.owned, ms: Date.now() - started }, 'compute nodes unchanged');
    }
  }

  /** One instance pass, serialised like resource passes; never rejects. */
  workInstances(): Promise<void> {
    return this.instances.request();
  }

  private async instancePass(): Promise<void> {
    if (this.stopped || !this.worker) return;
    const pending = await this.worker.pass();
    // Instances in flight are re-checked soon: a node's deploy or clean-up takes seconds, not
    // a whole poll interval (a quarter of a second costs one indexed query and a GET per node).
    if (pending > 0) this.instances.later(250);
  }

  /** Stops: timers off, work in flight finished, row marked down at once; idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    const working = Promise.all([this.resources.stop(), this.instances.stop(), this.rings?.stop()]);
    await Promise.all(this.listeners.map((l) => l.close().catch(() => undefined)));
    await working;
    if (this.store && this.serviceId !== undefined) {
      await markServiceDown(this.store, this.serviceId).catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'cannot mark the service down'));
      await this.store.notify(SERVICES_CHANNEL, `down:${this.host}`).catch(() => undefined);
    }
    this.log.info('compute service stopped');
  }
}
