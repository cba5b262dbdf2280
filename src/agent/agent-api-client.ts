/**
 * The deploy agent's side of Ironic's agent API (`agent.ts` owns it): the API version to ask for,
 * the lookup of its node by its MACs, the heartbeats that tell the conductor where it listens, and
 * the inventory post of an inspection (`continue_inspection`), each with the retries and waits that
 * keep a ramdisk going while the API is away or the node not yet known.
 */
import type http from 'node:http';
import { IronringError } from '../common/errors.js';
import type { AgentOptions } from './agent.js';
import { requestJson } from './http-json.js';
import { collectInventory } from './inventory.js';
import { localMacs } from './machine.js';
import { TOKEN_ALREADY_ISSUED } from './protocol.js';

/** The agent's version, as it reports it in heartbeats and `GET /v1/status`. */
export const AGENT_VERSION = '10.0.0-ironring';

/** The highest API version the agent asks for: tokens in heartbeats are Ironic's from 1.62. */
const MAX_ASKED_VERSION: readonly [number, number] = [1, 62];

/** The agent could not find its node, or the API refused it for good. */
export class AgentError extends IronringError {}

/** What a lookup found: the node, the agent token it carried, and the heartbeat timeout. */
export interface LookupResult {
  node: { uuid: string; properties: Record<string, unknown>; instance_info: Record<string, unknown> };
  token: string | null;
  heartbeatTimeout: number;
}

/** What the client reads of the agent that owns it. */
export interface AgentApiSession {
  /** Aborted when the agent stops: requests and waits end with it. */
  signal: AbortSignal;
  log: (line: string) => void;
  /** The node the agent found (null before), with its token. */
  lookup: () => LookupResult | null;
  /** Where the agent's command API listens (`callback_url`). */
  callbackUrl: () => string;
  /** True once the node is the operator's (rescued): no more heartbeats. */
  rescued: () => boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);


export class AgentApiClient {
  /** The API version asked for (`negotiateVersion` sets it). */
  private version = '1.22';
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private heartbeatInFlight: Promise<void> | null = null;
  private heartbeatAgain = false;
  /** Heartbeats the API accepted. */
  heartbeats = 0;
  /** Lookups that found the node (one per session). */
  lookups = 0;
  /** Inventory posts made. */
  inventoryPosts = 0;

  constructor(
    private readonly options: AgentOptions,
    private readonly session: AgentApiSession,
  ) {}

  private say(line: string): void {
    this.session.log(line);
  }

  /**
   * Collects the hardware inventory and posts it to `url` with the node's agent token, as IPA's
   * inspection collector does (the body `{inventory, …}`); tries again on a network failure or a
   * 5xx/409 answer, and gives up (logged) on any other refusal: the conductor then fails the
   * inspection when it times out, and the operator reads why in this agent's log.
   */
  async postInventory(url: string): Promise<void> {
    const signal = this.session.signal;
    let inventory: Record<string, unknown>;
    try {
      const { sysRoot, devRoot, lldpTimeoutSeconds } = this.options;
      const collect = () =>
        collectInventory({
          ...(sysRoot ? { sysRoot } : {}),
          ...(devRoot ? { devRoot } : {}),
          ...(lldpTimeoutSeconds !== undefined ? { lldp: { timeoutSeconds: lldpTimeoutSeconds, log: (line: string) => this.say(`inspection: ${line}`) } } : {}),
        }) as unknown as Promise<Record<string, unknown>>;
      inventory = await (this.options.inventory ?? collect)();
    } catch (err) {
      this.say(`inspection: could not collect the inventory: ${(err as Error).message}`);
      return;
    }
    const body: Record<string, unknown> = { inventory };
    const token = this.session.lookup()?.token;
    if (token) body.agent_token = token;
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await requestJson({
          method: 'POST',
          url: new URL(url),
          body,
          headers: { 'user-agent': `ironring-agent/${AGENT_VERSION}`, 'x-openstack-ironic-api-version': this.version },
          timeoutMs: 60_000,
          maxBytes: 1024 * 1024,
          signal,
          ...(this.options.ca ? { ca: this.options.ca } : {}),
        });
        if (answer.status >= 200 && answer.status < 300) {
          this.inventoryPosts++;
          this.say(`inspection: inventory posted (${answer.status})`);
          return;
        }
        this.say(`inspection: posting the inventory: ${answer.status} ${answer.text.slice(0, 256)}`);
        if (answer.status !== 409 && answer.status < 500) return;
      } catch (err) {
        if (signal.aborted) return;
        this.say(`inspection: posting the inventory failed: ${(err as Error).message}`);
      }
      if (attempt >= 10) return;
      await this.pause(this.options.lookupIntervalMs ?? 5000).catch(() => undefined);
      if (signal.aborted) return;
    }
  }

  private async api(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: unknown; headers: http.IncomingHttpHeaders }> {
    const answer = await requestJson({
      method,
      url: new URL(this.options.apiUrl.replace(/\/$/, '') + path),
      body,
      headers: { 'user-agent': `ironring-agent/${AGENT_VERSION}`, 'x-openstack-ironic-api-version': this.version },
      timeoutMs: 60_000,
      maxBytes: 4 * 1024 * 1024,
      signal: this.session.signal,
      ...(this.options.ca ? { ca: this.options.ca } : {}),
    });
    return { status: answer.status, json: answer.json === undefined ? answer.text.slice(0, 256) : answer.json, headers: answer.headers };
  }

  /** Sets the API version to ask for: the API's highest, up to 1.62 (tokens in heartbeats). */
  async negotiateVersion(): Promise<void> {
    for (;;) {
      try {
        const { headers, json } = await this.api('GET', '/v1');
        const header = headers['x-openstack-ironic-api-maximum-version'];
        const body = isObject(json) && isObject(json.version) ? json.version.version : undefined;
        const max = typeof header === 'string' ? header : typeof body === 'string' ? body : '1.22';
        const m = /^1\.(\d+)$/.exec(max);
        const minor = m ? Math.min(Number(m[1]), MAX_ASKED_VERSION[1]) : 22;
        this.version = `1.${minor}`;
        return;
      } catch (err) {
        if (this.session.signal.aborted) throw err;
        this.say(`the API at ${this.options.apiUrl} is not answering (${(err as Error).message}); trying again`);
        await this.pause(this.options.lookupIntervalMs ?? 5000);
      }
    }
  }

  /** Looks the node up until found; `unknownIsAnswer`: a 404 (no node has these MACs) answers null. */
  async findNode(unknownIsAnswer: true): Promise<LookupResult | null>;
  async findNode(): Promise<LookupResult>;
  async findNode(unknownIsAnswer = false): Promise<LookupResult | null> {
    const macs = this.options.macs ?? (await localMacs(this.options.sysRoot));
    if (macs.length === 0) throw new AgentError('no Ethernet interface was found to look the node up by; pass --mac');
    const started = Date.now();
    const deadline = this.options.lookupTimeoutMs ?? 0;
    for (;;) {
      try {
        const { status, json } = await this.api('GET', `/v1/lookup?addresses=${encodeURIComponent(macs.join(','))}`);
        if (status === 200 && isObject(json) && isObject(json.node) && isObject(json.config) && typeof json.node.uuid === 'string') {
          const token = typeof json.config.agent_token === 'string' ? json.config.agent_token : null;
          if (token === TOKEN_ALREADY_ISSUED) {
            this.say(`node ${json.node.uuid} already gave its agent token to another lookup: this agent cannot heartbeat; waiting for a new agent session`);
          } else {
            const timeout = typeof json.config.heartbeat_timeout === 'number' && json.config.heartbeat_timeout > 0 ? json.config.heartbeat_timeout : 300;
            const node = json.node as LookupResult['node'];
            this.lookups++;
            return { node: { uuid: node.uuid, properties: isObject(node.properties) ? node.properties : {}, instance_info: isObject(node.instance_info) ? node.instance_info : {} }, token, heartbeatTimeout: timeout };
          }
        } else {
          this.say(`lookup by ${macs.join(', ')}: ${status} ${describe(json)}`);
          if (status === 404 && unknownIsAnswer) return null;
        }
      } catch (err) {
        if (this.session.signal.aborted) throw err;
        this.say(`lookup failed: ${(err as Error).message}`);
      }
      if (deadline > 0 && Date.now() - started > deadline) throw new AgentError(`no node was found for ${macs.join(', ')} within ${deadline / 1000} s`);
      await this.pause(this.options.lookupIntervalMs ?? 5000);
    }
  }

  /** Waits `ms`, or rejects when the agent stops; the stop listener goes with the wait (a lookup loop waits forever). */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const signal = this.session.signal;
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private period(): number {
    if (this.options.heartbeatIntervalMs !== undefined) return this.options.heartbeatIntervalMs;
    const timeout = (this.session.lookup()?.heartbeatTimeout ?? 300) * 1000;
    return timeout * (0.3 + Math.random() * 0.3);
  }

  /** Schedules the next heartbeat in `ms`; one in flight is followed by another at once. */
  heartbeatSoon(ms: number): void {
    if (this.session.signal.aborted || this.session.rescued()) return;
    if (this.heartbeatInFlight !== null && ms === 0) {
      this.heartbeatAgain = true;
      return;
    }
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = setTimeout(() => {
      this.heartbeatTimer = null;
      this.heartbeatInFlight = this.heartbeat().finally(() => {
        this.heartbeatInFlight = null;
        if (this.heartbeatAgain) {
          this.heartbeatAgain = false;
          this.heartbeatSoon(0);
        }
      });
    }, ms);
  }

  /** Cancels the scheduled heartbeat (one in flight goes on; see `heartbeatSettled`). */
  cancelHeartbeat(): void {
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  /** Resolves once no heartbeat is in flight (whatever it ended with). */
  async heartbeatSettled(): Promise<void> {
    await this.heartbeatInFlight?.catch(() => undefined);
  }

  /** Sends one heartbeat now, then schedules the next: a period later, sooner after a refusal or failure. */
  async heartbeat(): Promise<void> {
    const lookup = this.session.lookup();
    if (lookup === null) return;
    let next = this.period();
    try {
      const body: Record<string, unknown> = { callback_url: this.session.callbackUrl(), agent_version: AGENT_VERSION };
      if (lookup.token !== null) body.agent_token = lookup.token;
      const { status, json } = await this.api('POST', `/v1/heartbeat/${encodeURIComponent(lookup.node.uuid)}`, body);
      if (status >= 200 && status < 300) {
        this.heartbeats++;
      } else {
        // 409: the conductor is busy with the node; anything else is logged and tried again.
        this.say(`heartbeat: ${status} ${describe(json)}`);
        if (status === 409 || status >= 500) next = Math.min(next, 5000);
      }
    } catch (err) {
      if (this.session.signal.aborted) return;
      this.say(`heartbeat failed: ${(err as Error).message}`);
      next = Math.min(next, 5000);
    }
    this.heartbeatSoon(next);
  }
}

/** The message of an API refusal (Ironic's `faultstring`, unwrapped), else the answer, bounded. */
function describe(json: unknown): string {
  if (isObject(json)) {
    const fault = json.error_message ?? json.message ?? json.faultstring;
    if (typeof fault === 'string') {
      try {
        const inner = JSON.parse(fault) as { faultstring?: unknown };
        if (typeof inner.faultstring === 'string') return inner.faultstring;
      } catch {
        // a plain message
      }
      return fault.slice(0, 512);
    }
  }
  return JSON.stringify(json)?.slice(0, 512) ?? '';
}
