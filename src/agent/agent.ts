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
 *
 * The requests to the API (1, 2, and the inventory post of an inspection) are `agent-api-client.ts`'s.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { agentTokenHash } from './agent-token.js';
import { AGENT_VERSION, AgentApiClient, AgentError } from './agent-api-client.js';
import type { LookupResult } from './agent-api-client.js';
import { defaultPowerOff, routeSource as routeSourceOf } from './machine.js';

export { localMacs, routeSource } from './machine.js';
export { AGENT_VERSION, AgentError } from './agent-api-client.js';
import { COMMANDS } from './agent-commands.js';
import type { CommandContext } from './agent-commands.js';
import type { WriteImageOptions } from './disk/index.js';
import { publicView, redact, serialise, view, commandResult } from './command-results.js';
import type { StoredCommand } from './command-results.js';
import { parseCommandRequest } from './protocol.js';

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
  /**
   * Listen this many seconds for LLDP on each interface before posting the inventory
   * (`ipa-collect-lldp`, `ipa-lldp-timeout`); unset, the inventory's `lldp` is null.
   */
  lldpTimeoutSeconds?: number;
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


export class Agent {
  private server: http.Server | null = null;
  private lookup: LookupResult | null = null;
  private callbackUrl = '';
  private readonly commands = new Map<string, StoredCommand>();
  private running: StoredCommand | null = null;
  private lastDevice: string | null = null;
  private readonly logs: string[] = [];
  private readonly stopping = new AbortController();
  private readonly startedAt = Date.now() / 1000;
  /** Lookup, heartbeats and the inventory post (`agent-api-client.ts`). */
  private readonly client: AgentApiClient;

  constructor(private readonly options: AgentOptions) {
    this.client = new AgentApiClient(options, {
      signal: this.stopping.signal,
      log: (line) => this.say(line),
      lookup: () => this.lookup,
      callbackUrl: () => this.callbackUrl,
      rescued: () => this.isRescued,
    });
  }

  /** Heartbeats the API accepted, for tests and the log. */
  get heartbeats(): number {
    return this.client.heartbeats;
  }

  /** Lookups that found the node (one per session), for tests. */
  get lookups(): number {
    return this.client.lookups;
  }

  /** Inventory posts made (tests). */
  get inventoryPosts(): number {
    return this.client.inventoryPosts;
  }

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
    await this.client.negotiateVersion();
    const inspection = this.options.inspectionCallbackUrl;
    // Booted to inspect: a machine no node knows (auto-discovery) posts its inventory at once, as
    // IPA does, and the API enrolls it; then it goes on looking itself up like any agent.
    const found = inspection === undefined ? await this.client.findNode() : await this.client.findNode(true);
    if (found === null) {
      this.say('no node knows this machine: posting the inventory for discovery');
      await this.client.postInventory(inspection!);
      this.lookup = await this.client.findNode();
    } else this.lookup = found;
    this.say(`found node ${this.lookup.node.uuid}; heartbeat timeout ${this.lookup.heartbeatTimeout} s`);
    if (inspection === undefined || found === null) {
      this.client.heartbeatSoon(0);
      return;
    }
    // The conductor hears where this agent listens before the inventory ends the inspection, so
    // that fast track can keep it up for the next verb; heartbeats go on after it.
    await this.client.heartbeat();
    await this.client.postInventory(inspection);
  }

  /** True once `rescue.finalize_rescue` set the rescue user. */
  isRescued = false;

  /** The rescue user is set: no more heartbeats (the node left the agent's states); tell the owner of the process. */
  private rescued(): void {
    this.isRescued = true;
    this.client.cancelHeartbeat();
    this.say(`IRONRING-RESCUE-READY: log in as rescue on the console`);
    // After the command's answer is on its way.
    setTimeout(() => this.options.onRescued?.(), 200).unref();
  }

  async stop(): Promise<void> {
    this.stopping.abort(new AgentError('the agent is stopping'));
    this.client.cancelHeartbeat();
    await this.client.heartbeatSettled();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
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
        this.client.heartbeatSoon(0);
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
