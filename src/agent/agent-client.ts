/**
 * The conductor's client of a deploy agent's command API (IPA's, `src/agent/protocol.ts`): runs a
 * command, reads how it went. Everything the agent answers is bounded and checked before use.
 *
 * **The credential.** The node's owner keeps only the digest of the node's agent token
 * (`src/agent/agent-token.ts`), never the token, so it presents that digest as `agent_token`;
 * `ironring agent` accepts its token or the token's digest. An agent that compares the parameter
 * with its token alone (a stock IPA) refuses the digest with 401, which ends the deploy with that
 * message: see docs/deploy.md, "Who may command the agent".
 */
import { IronringError } from '../common/errors.js';
import { AnswerTooLarge, requestJson } from './http-json.js';
import { AGENT_PATHS, MAX_AGENT_ANSWER_BYTES, parseCommandList, parseCommandResult } from './protocol.js';
import type { AgentCommandName, AgentCommandResult } from './protocol.js';

/** The agent could not be reached, answered an error, or answered something that is no command result. */
export class AgentCommandFailed extends IronringError {
  constructor(
    message: string,
    /** The HTTP status the agent answered, when it answered. */
    readonly status: number | null = null,
  ) {
    super(message);
  }
}

export interface AgentClientOptions {
  /** Seconds one request may take (Ironic's `[agent] command_timeout`, 60). */
  timeoutSeconds?: number;
  /** Attempts for a request that could not connect (Ironic's `[agent] max_command_attempts`, 3). */
  attempts?: number;
  /** Pause between attempts, in ms. Default 1000. */
  retryDelayMs?: number;
  /** Extra CA certificates (PEM) for agents that listen on https. */
  ca?: string | Buffer;
}

/** Where and as whom: the agent's `callback_url` and the credential it accepts. */
export interface AgentEndpoint {
  url: string;
  /** Sent as `agent_token` (the token's digest; see the file comment). */
  token: string;
}

/** Errors worth another attempt: the request never reached an agent. */
const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN']);

export class AgentClient {
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly retryDelayMs: number;

  constructor(private readonly options: AgentClientOptions = {}) {
    this.timeoutMs = (options.timeoutSeconds ?? 60) * 1000;
    this.attempts = Math.max(1, options.attempts ?? 3);
    this.retryDelayMs = options.retryDelayMs ?? 1000;
  }

  /**
   * Runs a command. `wait` false (the default) answers at once with the command RUNNING, and the
   * caller polls (`command`); true waits for its end (the agent holds the request open), for short
   * commands only. A FAILED result is returned, not thrown: the caller decides what it means.
   */
  async run(agent: AgentEndpoint, name: AgentCommandName, params: Record<string, unknown>, options: { wait?: boolean; signal?: AbortSignal } = {}): Promise<AgentCommandResult> {
    const query = `?wait=${options.wait === true ? 'true' : 'false'}&agent_token=${encodeURIComponent(agent.token)}`;
    const answer = await this.request(agent.url, 'POST', `${AGENT_PATHS.commands}${query}`, { name, params }, options.signal);
    return parseAgentAnswer(() => parseCommandResult(answer, `the agent's answer to ${name}`));
  }

  /** Every command the agent ran since it started, oldest first. */
  async commands(agent: AgentEndpoint, signal?: AbortSignal): Promise<AgentCommandResult[]> {
    const answer = await this.request(agent.url, 'GET', `${AGENT_PATHS.commands}?agent_token=${encodeURIComponent(agent.token)}`, undefined, signal);
    return parseAgentAnswer(() => parseCommandList(answer));
  }

  /** One command by id; null when the agent does not know it (it restarted since). */
  async command(agent: AgentEndpoint, id: string, signal?: AbortSignal): Promise<AgentCommandResult | null> {
    try {
      const answer = await this.request(agent.url, 'GET', `${AGENT_PATHS.command(id)}?agent_token=${encodeURIComponent(agent.token)}`, undefined, signal);
      return parseAgentAnswer(() => parseCommandResult(answer, `command ${id}`));
    } catch (err) {
      if (err instanceof AgentCommandFailed && err.status === 404) return null;
      throw err;
    }
  }

  private async request(base: string, method: 'GET' | 'POST', path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    let last: unknown;
    for (let attempt = 1; attempt <= this.attempts; attempt++) {
      try {
        return await this.once(base, method, path, body, signal);
      } catch (err) {
        last = err;
        const code = (err as NodeJS.ErrnoException).code;
        if (code === undefined || !RETRYABLE.has(code) || attempt === this.attempts || signal?.aborted) break;
        await new Promise((r) => setTimeout(r, this.retryDelayMs));
      }
    }
    if (last instanceof AgentCommandFailed) throw last;
    const where = `${method} ${base}${path.replace(/agent_token=[^&]*/, 'agent_token=***')}`;
    throw new AgentCommandFailed(`the agent at ${base} could not be reached (${where}): ${(last as Error).message}`);
  }

  private async once(base: string, method: 'GET' | 'POST', path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const url = new URL(base.replace(/\/$/, '') + path);
    let answer;
    try {
      answer = await requestJson({ method, url, body, timeoutMs: this.timeoutMs, maxBytes: MAX_AGENT_ANSWER_BYTES, ...(signal ? { signal } : {}), ...(this.options.ca ? { ca: this.options.ca } : {}) });
    } catch (err) {
      if (err instanceof AnswerTooLarge) throw new AgentCommandFailed(`the agent at ${base} answered more than ${MAX_AGENT_ANSWER_BYTES} bytes`);
      throw err;
    }
    const { status, json, text } = answer;
    if (status >= 200 && status < 300) {
      if (json === undefined) throw new AgentCommandFailed(`the agent at ${base} answered ${status} with a body that is not JSON`, status);
      return json;
    }
    throw new AgentCommandFailed(`the agent at ${base} refused ${method} ${url.pathname}: ${status} ${describeRefusal(json, text)}`, status);
  }
}

/** The agent's own message of a refusal (IPA answers `{"type", "code", "message", "details"}`). */
function describeRefusal(json: unknown, text: string): string {
  if (typeof json === 'object' && json !== null) {
    const { message, details } = json as { message?: unknown; details?: unknown };
    const parts = [message, details].filter((p): p is string => typeof p === 'string' && p !== '');
    if (parts.length > 0) return parts.join(': ').slice(0, 1024);
  }
  return text.slice(0, 256) || '(no body)';
}

function parseAgentAnswer<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new AgentCommandFailed(`the agent answered something that is not IPA's command API: ${(err as Error).message}`);
  }
}
