/**
 * The deploy ramdisk's entry point of the agent (`/init` runs it with the ramdisk's node): the
 * same `Agent` as `ironring agent`, configured from the kernel command line only, so the ramdisk
 * needs none of the CLI's dependencies. Parameters: `ipa-api-url=` (required; Ironic's name, so
 * Ironic's boot files work too), `ironring.agent_port=` (default 9999), `ipa-advertise-host=`,
 * `ipa-inspection-callback-url=` (inspect the machine and post its inventory there),
 * `ipa-collect-lldp=1` and `ipa-lldp-timeout=` (listen for LLDP first; src/agent/lldp.ts).
 * Exits non-zero when it cannot start; /init starts it again.
 */
import { readFileSync } from 'node:fs';
import { Agent } from './agent.js';
import { lldpSettings } from './lldp.js';

function params(): Map<string, string> {
  const map = new Map<string, string>();
  let line = '';
  try {
    line = readFileSync(process.env.IRONRING_AGENT_CMDLINE ?? '/proc/cmdline', 'utf8');
  } catch {
    // no /proc: nothing configured
  }
  for (const word of line.trim().split(/\s+/)) {
    const eq = word.indexOf('=');
    if (eq > 0) map.set(word.slice(0, eq), word.slice(eq + 1));
  }
  return map;
}

// The console may be gone (a serial line closed): never die of EPIPE on a log line.
process.stdout.on('error', () => undefined);

const p = params();
const apiUrl = p.get('ipa-api-url');
if (apiUrl === undefined || apiUrl === '') {
  process.stdout.write('ironring agent: no ipa-api-url= on the kernel command line; nothing to look up\n');
  process.exit(2);
}
const port = Number(p.get('ironring.agent_port') ?? 9999);
const advertise = p.get('ipa-advertise-host');
const inspection = p.get('ipa-inspection-callback-url');
const lldp = lldpSettings(p);
const agent = new Agent({
  apiUrl,
  listenPort: Number.isInteger(port) && port > 0 && port < 65536 ? port : 9999,
  ...(advertise ? { advertiseHost: advertise } : {}),
  ...(inspection ? { inspectionCallbackUrl: inspection } : {}),
  ...(lldp ? { lldpTimeoutSeconds: lldp.timeoutSeconds } : {}),
  log: (line) => process.stdout.write(`ironring-agent: ${line}\n`),
  // Rescued: /init sees the marker this left in /run and offers a login on the console instead.
  onRescued: () => void agent.stop().then(() => process.exit(0)),
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void agent.stop().then(() => process.exit(0)));
agent.start().catch((err: unknown) => {
  process.stdout.write(`ironring-agent: could not start: ${(err as Error).message}\n`);
  process.exit(1);
});
