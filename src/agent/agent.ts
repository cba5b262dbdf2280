/**
 * `ironring agent`: the deploy agent that runs in the deploy ramdisk, on the machine being deployed.
 * It speaks Ironic's agent protocol (`protocol.ts`) so that ironring's conductor and Ironic's can
 * drive it alike:
 *
 * 1. **Lookup**: `GET {api}/v1/lookup?addresses=<its MACs>` until a node that expects an agent
 *    answers (every `lookupIntervalMs`, for at most `lookupTimeoutMs`), keeping the node and the
 *    agent token the answer carries.
 * 2. **Heartbeat**: `POST {api}/v1/heartbeat/{node}` with its `callback_url` and token, every
 *    0.3–0.6 × the `heartbeat_timeout` the lookup said (IPA's spread), and at once when an
 *    asynchronous command ends, so the conductor hears of it without waiting a period.
 * 3. **Commands**: IPA's command API on `listen` (`agent-commands.ts`). A caller must present the
 *    token, or its SHA-256 digest (what ironring's conductor holds), as `agent_token`; anything
 *    else gets 401 before its body is read.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { IronringError } from '../common/errors.js';
import { agentTokenHash } from './agent-token.js';
import { requestJson } from './http-json.js';
import { collectInventory } from './inventory.js';
import { defaultPowerOff, localMacs, routeSource as routeSourceOf } from './machine.js';

export { localMacs, routeSource } from './machine.js';
import { COMMANDS } from './agent-commands.js';
import type { CommandContext } from './agent-commands.js';
import type { WriteImageOptions } from './disk/index.js';
import { publicView, redact, serialise, view, commandResult } from './command-results.js';
import type { StoredCommand } from './command-results.js';
import { TOKEN_ALREADY_ISSUED, parseCommandRequest } from './protocol.js';

/** The agent's version, as it reports it in heartbeats and `GET /v1/status`. */
export const AGENT_VERSION = '10.0.0-ironring';

/** The highest API version the agent asks for: tokens in heartbeats are Ironic's from 1.62. */
const MAX_ASKED_VERSION: readonly [number, number] = [1, 62];
/** Largest command request read, in bytes (image_info is small; a config drive would be larger). */
const MAX_COMMAND_BODY = 1024 * 1024;
/** Command results kept (the oldest are dropped beyond): `GET /v1/commands/` stays bounded. */
const MAX_KEPT_COMMANDS = 500;

export interface AgentOptions {
  /** The API's base URL (`ipa-api-url`), e.g. `http://192.0.2.1:6385`. */
  apiUrl: string;
  /** MACs to look up with; default those of the machine's Ethernet interfaces. */
  macs?: string[];
  /** Where the command API listens. Default 0.0.0.0:9999 (IPA's port). */
  listenHost?: string;
  listenPort?: number;
  /** The host put in `callback_url`; default the local address that routes to the API. */
  advertiseHost?: string;
  /** Directories standing for /sys and /dev (tests). */
  sysRoot?: string;
  devRoot?: string;
  /** Lookup retry period and give-up time. Defaults 5 s and 0 (never give up). */
  lookupIntervalMs?: number;
  lookupTimeoutMs?: number;
  /** Overrides the heartbeat period the lookup's `heartbeat_timeout` gives (tests). */
  heartbeatIntervalMs?: number;
  /** Powers the machine off (`standby.power_off`); default `poweroff -f`, else sysrq. */
  powerOff?: () => Promise<void>;
  writeOptions?: Partial<WriteImageOptions>;
  /**
   * Where to post the hardware inventory (`ipa-inspection-callback-url`, Ironic's
   * `…/v1/continue_inspection`): given, the agent inspects the machine once it found its node.
   */
  inspectionCallbackUrl?: string;
  /** Collects the inventory (tests); default `collectInventory` over `sysRoot`/`devRoot`. */
  inventory?: () => Promise<Record<string, unknown>>;
  /** Directories standing for /etc and /run (tests): where `rescue.finalize_rescue` writes. */
  etcRoot?: string;
  runRoot?: string;
  /**
   * Called once the rescue user is set and the answer sent: the agent has stopped heartbeating
   * (the node is the operator's now). The ramdisk's entry point exits, and /init offers a login.
   */
  onRescued?: () => void;
  /** Extra CA certificates (PEM) for an https API. */
  ca?: string | Buffer;
  log?: (line: string) => void;
}

/** The agent could not find its node, or the API refused it for good. */
export class AgentError extends IronringError {}

interface LookupResult {
  node: { uuid: string; properties: Record<string, unknown>; instance_info: Record<string, unknown> };
  token: string | null;
  heartbeatTimeout: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);


export class Agent {
  private server: http.Server | null = null;
  private lookup: LookupResult | null = null;
  private callbackUrl = '';
  private version = '1.22';
  private readonly commands = new Map<string, StoredCommand>();
  private running: StoredCommand | null = null;
  private lastDevice: string | null = null;
  private readonly logs: string[] = [];
  private readonly stopping = new AbortController();
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private heartbeatInFlight: Promise<void> | null = null;
  private heartbeatAgain = false;
  private readonly startedAt = Date.now() / 1000;
  /** Heartbeats the API accepted, for tests and the log. */
  heartbeats = 0;
  /** Lookups that found the node (one per session), for tests. */
  lookups = 0;

  constructor(private readonly options: AgentOptions) {}

  private say(line: string): void {
    const stamped = `${new Date().toISOString()} ${line}`;
    this.logs.push(stamped);
    if (this.logs.length > 2000) this.logs.shift();
    this.options.log?.(stamped);
  }

  /** The node this agent found, once it has. */
  get nodeUuid(): string | null {
    return this.lookup?.node.uuid ?? null;
  }

  /** Where the command API listens, once started. */
  get url(): string {
    return this.callbackUrl;
  }

  /** Starts the command API, finds the node, and heartbeats until `stop`. */
  async start(): Promise<void> {
    const api = new URL(this.options.apiUrl);
    const server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.listenPort ?? 9999, this.options.listenHost ?? '0.0.0.0', () => resolve());
    });
    this.server = server;
    const port = (server.address() as { port: number }).port;
    const host = this.options.advertiseHost ?? (await routeSourceOf(api.hostname, Number(api.port || (api.protocol === 'https:' ? 443 : 80))));
    this.callbackUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    this.say(`command API listening at ${this.callbackUrl}`);
    this.version = await this.negotiateVersion();
    const inspection = this.options.inspectionCallbackUrl;
    // Booted to inspect: a machine no node knows (auto-discovery) posts its inventory at once, as
    // IPA does, and the API enrolls it; then it goes on looking itself up like any agent.
    const found = inspection === undefined ? await this.findNode() : await this.findNode(true);
    if (found === null) {
      this.say('no node knows this machine: posting the inventory for discovery');
      await this.postInventory(inspection!);
      this.lookup = await this.findNode();
    } else this.lookup = found;
    this.say(`found node ${this.lookup.node.uuid}; heartbeat timeout ${this.lookup.heartbeatTimeout} s`);
    if (inspection === undefined || found === null) {
      this.heartbeatSoon(0);
      return;
    }
    // The conductor hears where this agent listens before the inventory ends the inspection, so
    // that fast track can keep it up for the next verb; heartbeats go on after it.
    await this.heartbeat();
    await this.postInventory(inspection);
  }

  /** True once `rescue.finalize_rescue` set the rescue user. */
  isRescued = false;

  /** The rescue user is set: no more heartbeats (the node left the agent's states); tell the owner of the process. */
  private rescued(): void {
    this.isRescued = true;
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = null;
    this.say(`IRONRING-RESCUE-READY: log in as rescue on the console`);
    // After the command's answer is on its way.
    setTimeout(() => this.options.onRescued?.(), 200).unref();
  }

  /** Inventory posts made (tests). */
  inventoryPosts = 0;

  /**
   * Collects the hardware inventory and posts it to `url` with the node's agent token, as IPA's
   * inspection collector does (the body `{inventory, …}`); tries again on a network failure or a
   * 5xx/409 answer, and gives up (logged) on any other refusal: the conductor then fails the
   * inspection when it times out, and the operator reads why in this agent's log.
   */
  private async postInventory(url: string): Promise<void> {
    let inventory: Record<string, unknown>;
    try {
      inventory = await (this.options.inventory ?? (() => collectInventory({ ...(this.options.sysRoot ? { sysRoot: this.options.sysRoot } : {}), ...(this.options.devRoot ? { devRoot: this.options.devRoot } : {}) }) as unknown as Promise<Record<string, unknown>>))();
    } catch (err) {
      this.say(`inspection: could not collect the inventory: ${(err as Error).message}`);
      return;
    }
    const body: Record<string, unknown> = { inventory };
    if (this.lookup?.token) body.agent_token = this.lookup.token;
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await requestJson({
          method: 'POST',
          url: new URL(url),
          body,
          headers: { 'user-agent': `ironring-agent/${AGENT_VERSION}`, 'x-openstack-ironic-api-version': this.version },
          timeoutMs: 60_000,
          maxBytes: 1024 * 1024,
          signal: this.stopping.signal,
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
        if (this.stopping.signal.aborted) return;
        this.say(`inspection: posting the inventory failed: ${(err as Error).message}`);
      }
      if (attempt >= 10) return;
      await this.pause(this.options.lookupIntervalMs ?? 5000).catch(() => undefined);
      if (this.stopping.signal.aborted) return;
    }
  }

  async stop(): Promise<void> {
    this.stopping.abort(new AgentError('the agent is stopping'));
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    await this.heartbeatInFlight?.catch(() => undefined);
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }

  // ---- talking to the API -----------------------------------------------------------------

  private async api(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: unknown; headers: http.IncomingHttpHeaders }> {
    const answer = await requestJson({
      method,
      url: new URL(this.options.apiUrl.replace(/\/$/, '') + path),
      body,
      headers: { 'user-agent': `ironring-agent/${AGENT_VERSION}`, 'x-openstack-ironic-api-version': this.version },
      timeoutMs: 60_000,
      maxBytes: 4 * 1024 * 1024,
      signal: this.stopping.signal,
      ...(this.options.ca ? { ca: this.options.ca } : {}),
    });
    return { status: answer.status, json: answer.json === undefined ? answer.text.slice(0, 256) : answer.json, headers: answer.headers };
  }

  /** The API version to ask for: the API's highest, up to 1.62 (tokens in heartbeats). */
  private async negotiateVersion(): Promise<string> {
    for (;;) {
      try {
        const { headers, json } = await this.api('GET', '/v1');
        const header = headers['x-openstack-ironic-api-maximum-version'];
        const body = isObject(json) && isObject(json.version) ? json.version.version : undefined;
        const max = typeof header === 'string' ? header : typeof body === 'string' ? body : '1.22';
        const m = /^1\.(\d+)$/.exec(max);
        const minor = m ? Math.min(Number(m[1]), MAX_ASKED_VERSION[1]) : 22;
        return `1.${minor}`;
      } catch (err) {
        if (this.stopping.signal.aborted) throw err;
        this.say(`the API at ${this.options.apiUrl} is not answering (${(err as Error).message}); trying again`);
        await this.pause(this.options.lookupIntervalMs ?? 5000);
      }
    }
  }

  /** Looks the node up until found; `unknownIsAnswer`: a 404 (no node has these MACs) answers null. */
  private async findNode(unknownIsAnswer: true): Promise<LookupResult | null>;
  private async findNode(): Promise<LookupResult>;
  private async findNode(unknownIsAnswer = false): Promise<LookupResult | null> {
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
        if (this.stopping.signal.aborted) throw err;
        this.say(`lookup failed: ${(err as Error).message}`);
      }
      if (deadline > 0 && Date.now() - started > deadline) throw new AgentError(`no node was found for ${macs.join(', ')} within ${deadline / 1000} s`);
      await this.pause(this.options.lookupIntervalMs ?? 5000);
    }
  }

  /** Waits `ms`, or rejects when the agent stops; the stop listener goes with the wait (a lookup loop waits forever). */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const signal = this.stopping.signal;
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
    const timeout = (this.lookup?.heartbeatTimeout ?? 300) * 1000;
    return timeout * (0.3 + Math.random() * 0.3);
  }

  /** Schedules the next heartbeat in `ms`; one in flight is followed by another at once. */
  private heartbeatSoon(ms: number): void {
    if (this.stopping.signal.aborted || this.isRescued) return;
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

  private async heartbeat(): Promise<void> {
    const lookup = this.lookup;
    if (lookup === null) return;
    let next = this.period();
    try {
      const body: Record<string, unknown> = { callback_url: this.callbackUrl, agent_version: AGENT_VERSION };
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
      if (this.stopping.signal.aborted) return;
      this.say(`heartbeat failed: ${(err as Error).message}`);
      next = Math.min(next, 5000);
    }
    this.heartbeatSoon(next);
  }

  // ---- the command API --------------------------------------------------------------------

  /** True when `presented` is the token or its digest; constant time either way. */
  private authorized(presented: string | null): boolean {
    const token = this.lookup?.token ?? null;
    if (token === null) return false;
    const given = createHash('sha256').update(presented ?? '', 'utf8').digest();
    const asToken = timingSafeEqual(given, createHash('sha256').update(token, 'utf8').digest());
    const asDigest = timingSafeEqual(given, createHash('sha256').update(agentTokenHash(token), 'utf8').digest());
    return presented !== null && (asToken || asDigest);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const send = (status: number, body: unknown): void => {
      const text = body === null ? '' : JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    const refuse = (status: number, type: string, message: string): void => send(status, { type, code: status, message, details: '' });
    try {
      const url = new URL(req.url ?? '/', 'http://agent');
      const path = url.pathname.replace(/\/+$/, '') || '/';
      if (req.method === 'GET' && (path === '/v1/status' || path === '/v1')) {
        send(200, { started_at: this.startedAt, version: AGENT_VERSION });
        return;
      }
      if (path === '/v1/commands' || path.startsWith('/v1/commands/')) {
        // Running a command takes the token (or its digest). Reading results does not, as on IPA —
        // Ironic's conductor polls `GET /v1/commands/` without one — but a reader without it gets
        // no parameters and no collected logs (`publicView`).
        const trusted = this.authorized(url.searchParams.get('agent_token'));
        if (!trusted && req.method !== 'GET') {
          req.resume();
          refuse(401, 'Unauthorized', 'Token invalid.');
          return;
        }
        const show = (c: StoredCommand) => (trusted ? view(c) : publicView(c));
        const wait = url.searchParams.get('wait') === 'true';
        if (req.method === 'POST' && path === '/v1/commands') {
          const body = await readBody(req, MAX_COMMAND_BODY);
          await this.execute(body, wait, send, refuse);
          return;
        }
        if (req.method === 'GET' && path === '/v1/commands') {
          send(200, { commands: [...this.commands.values()].map(show) });
          return;
        }
        if (req.method === 'GET') {
          const id = decodeURIComponent(path.slice('/v1/commands/'.length));
          const command = this.commands.get(id);
          if (command === undefined) {
            refuse(404, 'RequestedObjectNotFoundError', `Command not found: ${id.slice(0, 64)}`);
            return;
          }
          if (wait) await command.done;
          send(200, show(command));
          return;
        }
      }
      req.resume();
      refuse(404, 'NotFound', `no such resource: ${req.method ?? ''} ${path.slice(0, 200)}`);
    } catch (err) {
      if (!res.headersSent) {
        const status = err instanceof BodyError ? err.status : 500;
        refuse(status, status === 500 ? 'InternalServerError' : 'BadRequest', (err as Error).message);
      }
    }
  }

  private async execute(body: unknown, wait: boolean, send: (status: number, body: unknown) => void, refuse: (status: number, type: string, message: string) => void): Promise<void> {
    let request;
    try {
      request = parseCommandRequest(body);
    } catch (err) {
      refuse(400, 'InvalidContentError', `Missing or invalid name or params: ${(err as Error).message}`);
      return;
    }
    const spec = COMMANDS[request.name];
    if (spec === undefined) {
      const extension = request.name.split('.')[0]!;
      const known = Object.keys(COMMANDS).some((n) => n.startsWith(`${extension}.`));
      if (known) refuse(400, 'InvalidCommandError', `Invalid command: ${extension} has no command ${request.name.slice(extension.length + 1)}`);
      else refuse(404, 'RequestedObjectNotFoundError', `Extension not found: ${extension}`);
      return;
    }
    if (this.running !== null) {
      refuse(409, 'AgentIsBusy', `Agent is busy executing ${this.running.command_name} (${this.running.id})`);
      return;
    }
    // IPA names a result by the method alone (`execute_deploy_step`, not `deploy.execute_deploy_step`):
    // Ironic's conductor looks for exactly those names when it polls.
    const method = request.name.slice(request.name.indexOf('.') + 1);
    const record = { id: randomUUID(), command_name: method, command_params: redact(request.params), command_status: 'RUNNING', command_error: null, command_result: null } as StoredCommand;
    this.say(`command ${request.name} (${record.id}) started`);
    const context = this.context();
    const run = async (): Promise<void> => {
      try {
        const result = await spec.run(request.params, context);
        record.command_result = commandResult(method, spec.async, result);
        record.command_status = 'SUCCEEDED';
        this.say(`command ${request.name} (${record.id}) succeeded${typeof result === 'string' ? `: ${result}` : ''}`);
      } catch (err) {
        record.command_error = serialise(err);
        record.command_status = 'FAILED';
        this.say(`command ${request.name} (${record.id}) failed: ${record.command_error.message}`);
      }
    };
    this.keep(record);
    if (spec.async) {
      this.running = record;
      record.done = run().finally(() => {
        this.running = null;
        // Tell the conductor now rather than a heartbeat period later.
        this.heartbeatSoon(0);
      });
      if (wait) await record.done;
    } else {
      record.done = run();
      await record.done;
    }
    send(200, view(record));
  }

  private keep(record: StoredCommand): void {
    this.commands.set(record.id, record);
    if (this.commands.size > MAX_KEPT_COMMANDS) {
      for (const [id, c] of this.commands) {
        if (c.command_status !== 'RUNNING') {
          this.commands.delete(id);
          break;
        }
      }
    }
  }

  private context(): CommandContext {
    return {
      node: this.lookup?.node ?? null,
      sysRoot: this.options.sysRoot ?? '/sys',
      devRoot: this.options.devRoot ?? '/dev',
      lastDevice: this.lastDevice,
      setLastDevice: (device) => {
        this.lastDevice = device;
      },
      writeOptions: this.options.writeOptions ?? {},
      powerOff: this.options.powerOff ?? defaultPowerOff,
      logLines: () => [...this.logs],
      rescueRoots: { etc: this.options.etcRoot ?? '/etc', run: this.options.runRoot ?? '/run' },
      rescued: () => this.rescued(),
      log: (line) => this.say(line),
      signal: this.stopping.signal,
    };
  }
}

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

class BodyError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function readBody(req: http.IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) {
    req.resume();
    throw new BodyError(413, `request body larger than ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyError(413, `request body larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new BodyError(400, 'request body: not valid JSON');
  }
}
