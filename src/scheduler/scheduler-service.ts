/**
 * The scheduler process (`ironring scheduler`): a service row in cell0's database (binary
 * `ironring-scheduler`; cell0 is the compute tier's API-level cell, where Nova keeps its scheduler
 * and super-conductor services too), a heartbeat by the database clock, and — on the one leading
 * scheduler (`leader.ts`) — host discovery every `discover_hosts_interval`, by service by default,
 * so a compute service that registers is mapped within one interval even with zero nodes.
 *
 * Placement itself needs no process: the compute API calls `scheduleServer` (`schedule.ts`), which
 * decides from the databases alone.
 */
import { CELL0_UUID, findCell } from '../cells/cells.js';
import type { CellStores } from '../cells/cell-stores.js';
import { CellNotFound } from '../cells/errors.js';
import { discoverHosts } from '../cells/discovery.js';
import type { DiscoveryResult } from '../cells/discovery.js';
import type { Logger } from '../common/logger.js';
import { SerialWork } from '../common/serial-work.js';
import type { SerialWorkStats } from '../common/serial-work.js';
import { NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import { SCHEDULER_BINARY, listServices, markServiceDown, registerService, serviceHeartbeat } from '../compute/services.js';
import { DISCOVERY_TOPIC, electLeader } from './leader.js';

export interface SchedulerServiceOptions {
  host: string;
  api: Store;
  cells: CellStores;
  logger: Logger;
  reportInterval: number;
  serviceDownTime: number;
  /** Seconds between discoveries on the leader; ≤ 0 disables periodic discovery. */
  discoverHostsInterval: number;
  discoverHostsByService: boolean;
}

export class SchedulerService {
  readonly host: string;
  private store: Store | undefined;
  private serviceId: number | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  /** Periodic discovery: every `discover_hosts_interval`, one at a time; failures logged, counted, retried. */
  private readonly discovery: SerialWork;
  /** The result of the last discovery run (null when this scheduler did not lead, or it failed). */
  private lastDiscovery: DiscoveryResult | null = null;
  private stopped = false;
  private leading = false;
  private readonly log: Logger;
  /** Discovery runs this scheduler made (for status and tests). */
  runs = 0;

  constructor(private readonly options: SchedulerServiceOptions) {
    this.host = options.host;
    this.log = options.logger.child({ component: 'scheduler', host: options.host });
    this.discovery = new SerialWork({
      name: 'periodic host discovery',
      run: () => this.discover(),
      logger: this.log,
      intervalMs: this.discoveryEnabled ? options.discoverHostsInterval * 1000 : 0,
    });
  }

  get discoveryEnabled(): boolean {
    return this.options.discoverHostsInterval > 0;
  }

  get id(): number {
    if (this.serviceId === undefined) throw new Error('scheduler not started');
    return this.serviceId;
  }

  async start(): Promise<void> {
    const { options } = this;
    let cell0;
    try {
      cell0 = await findCell(options.api, CELL0_UUID);
    } catch (err) {
      if (err instanceof CellNotFound || err instanceof NotFound) {
        throw new NotFound('cell0 is not mapped in the API database; run `ironring manage cell map-cell0` first (ironring up does it for you)');
      }
      throw err;
    }
    this.store = await options.cells.get(cell0);
    this.serviceId = await registerService(
      this.store,
      { host: this.host, binary: SCHEDULER_BINARY, topic: this.discoveryEnabled ? DISCOVERY_TOPIC : null },
      options.serviceDownTime,
    );
    this.log.info(
      { serviceId: this.serviceId, discoverHostsInterval: this.discoveryEnabled ? options.discoverHostsInterval : 'off', byService: options.discoverHostsByService },
      'scheduler registered',
    );
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const timer = setInterval(() => void fn().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'periodic task failed')), ms);
      this.timers.push(timer);
    };
    every(options.reportInterval * 1000, () => this.heartbeat());
    if (this.discoveryEnabled) this.discovery.start({ immediate: true });
  }

  private async heartbeat(): Promise<void> {
    if (this.stopped || !this.store || this.serviceId === undefined) return;
    if (!(await serviceHeartbeat(this.store, this.serviceId))) {
      this.serviceId = await registerService(this.store, { host: this.host, binary: SCHEDULER_BINARY, topic: this.discoveryEnabled ? DISCOVERY_TOPIC : null }, this.options.serviceDownTime);
    }
  }

  /** Whether this scheduler leads, by the database clock. */
  async isLeader(): Promise<boolean> {
    if (!this.store || this.serviceId === undefined) return false;
    const services = await listServices(this.store, SCHEDULER_BINARY, this.options.serviceDownTime);
    return electLeader(services, this.serviceId) === this.serviceId;
  }

  /** Discovery runs and failures (a failed run is retried after a back-off). */
  discoveryStats(): SerialWorkStats {
    return this.discovery.stats();
  }

  /**
   * One periodic discovery if this scheduler leads (a request during a run gets a run of its own
   * after it); the result, or null when it does not lead or the run failed. Never rejects.
   */
  async periodicDiscovery(): Promise<DiscoveryResult | null> {
    await this.discovery.request();
    return this.lastDiscovery;
  }

  private async discover(): Promise<void> {
    this.lastDiscovery = null;
    if (this.stopped) return;
    const leading = await this.isLeader();
    if (leading !== this.leading) {
      this.leading = leading;
      this.log.info(leading ? 'leading scheduler: running periodic host discovery' : 'another scheduler leads host discovery');
    }
    if (!leading) return;
    const result = await discoverHosts(this.options.api, this.options.cells, { byService: this.options.discoverHostsByService, logger: this.log });
    this.runs++;
    if (result.mapped.length > 0) this.log.info({ mapped: result.mapped.map((m) => `${m.host}→${m.cellName}`) }, 'periodic discovery mapped hosts');
    this.lastDiscovery = result;
  }

  /** Stops: timers off, a discovery in flight finished, row marked down at once; idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    await this.discovery.stop();
    if (this.store && this.serviceId !== undefined) await markServiceDown(this.store, this.serviceId).catch(() => undefined);
    this.log.info('scheduler stopped');
  }
}
