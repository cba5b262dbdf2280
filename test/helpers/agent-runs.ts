/**
 * What the in-process agent tests (test/agent/) share: an `ironring agent` on a loopback port with
 * short lookup and heartbeat periods, and waiting for a node to reach a state.
 */
import { Agent } from '../../src/agent/agent.js';
import type { AgentOptions } from '../../src/agent/agent.js';

/** An agent on 127.0.0.1 (any port), looking up every 50 ms and heartbeating every 200 ms; started, not awaited. */
export function startLoopbackAgent(options: Pick<AgentOptions, 'apiUrl' | 'macs'> & Partial<AgentOptions>): Agent {
  const agent = new Agent({ listenHost: '127.0.0.1', listenPort: 0, advertiseHost: '127.0.0.1', lookupIntervalMs: 50, heartbeatIntervalMs: 200, ...options });
  void agent.start().catch(() => undefined);
  return agent;
}

/**
 * Polls `read` until the node is in one of `states` (and, `unlocked`, its lock released: the
 * owner's work on it is over); throws after `ms` naming where it is and its last_error.
 */
export async function untilState<R extends { provision_state: string; last_error: string | null; reservation: string | null }>(read: () => Promise<R>, states: readonly string[], ms = 20_000, unlocked = true): Promise<R> {
  const end = Date.now() + ms;
  for (;;) {
    const node = await read();
    if (states.includes(node.provision_state) && (!unlocked || node.reservation === null)) return node;
    if (Date.now() > end) throw new Error(`node still ${node.provision_state} (wanted ${states.join(' or ')}); last_error ${node.last_error}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
