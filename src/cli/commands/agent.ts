/** `ironring agent`: the deploy agent, run inside the deploy ramdisk on the machine being deployed. */
import { readFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { UsageError } from '../../common/errors.js';
import { waitForStopSignal } from '../signals.js';

/** `ipa-api-url=` from the kernel command line, as the boot files pass it (Ironic's parameter name). */
export async function apiUrlFromCmdline(path = '/proc/cmdline'): Promise<string | null> {
  const line = await readFile(path, 'utf8').catch(() => '');
  for (const word of line.trim().split(/\s+/)) {
    if (word.startsWith('ipa-api-url=')) return word.slice('ipa-api-url='.length) || null;
  }
  return null;
}

const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;

export function agentCommand(): Command {
  return new Command('agent')
    .summary('run the deploy agent (inside the deploy ramdisk, as root)')
    .description(
      'Run the deploy agent on the machine being deployed, as IPA runs in Ironic\'s ramdisk: look the node up by ' +
        'the machine\'s MACs, heartbeat to the API, and serve IPA\'s command API (standby.prepare_image streams a ' +
        'raw whole-disk image to the disk chosen by the node\'s root device hints and verifies its digest). ' +
        'The API URL comes from --api-url, else from ipa-api-url= on the kernel command line. ' +
        'Runs until SIGINT or SIGTERM. See docs/deploy.md.',
    )
    .addOption(new Option('--api-url <url>', 'the API to look up and heartbeat to (default: ipa-api-url= from /proc/cmdline)'))
    .addOption(new Option('--mac <mac...>', 'MAC addresses to look the node up by (default: every Ethernet interface)'))
    .addOption(new Option('--listen <host:port>', 'where the command API listens').default('0.0.0.0:9999'))
    .addOption(new Option('--advertise-host <host>', 'host in the callback URL given to the conductor (default: the local address that routes to the API)'))
    .addOption(new Option('--lookup-timeout <seconds>', 'give up when no node is found within this many seconds (0: never)').default('0'))
    .addOption(new Option('--sys-root <dir>', 'directory standing for /sys').default('/sys').hideHelp())
    .addOption(new Option('--dev-root <dir>', 'directory standing for /dev').default('/dev').hideHelp())
    .action(async (opts: { apiUrl?: string; mac?: string[]; listen: string; advertiseHost?: string; lookupTimeout: string; sysRoot: string; devRoot: string }) => {
      const apiUrl = opts.apiUrl ?? (await apiUrlFromCmdline());
      if (apiUrl === null) throw new UsageError('no API URL: pass --api-url, or boot with ipa-api-url=<url> on the kernel command line');
      let parsed: URL;
      try {
        parsed = new URL(apiUrl);
      } catch {
        throw new UsageError(`--api-url: ${JSON.stringify(apiUrl)} is not a URL`);
      }
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError('--api-url: expected an http:// or https:// URL');
      const macs = opts.mac?.map((m) => m.toLowerCase());
      const bad = macs?.find((m) => !MAC.test(m));
      if (bad !== undefined) throw new UsageError(`--mac: ${JSON.stringify(bad)} is not a MAC address (aa:bb:cc:dd:ee:ff)`);
      const listen = /^(.*):(\d{1,5})$/.exec(opts.listen);
      if (!listen || Number(listen[2]) > 65535) throw new UsageError('--listen: expected host:port');
      const lookupTimeout = Number(opts.lookupTimeout);
      if (!Number.isInteger(lookupTimeout) || lookupTimeout < 0) throw new UsageError('--lookup-timeout: expected a whole number of seconds');
      const stopSignal = waitForStopSignal(() => process.exit(130));
      const { Agent } = await import('../../agent/agent.js');
      const agent = new Agent({
        apiUrl,
        ...(macs ? { macs } : {}),
        listenHost: listen[1]!.replace(/^\[|\]$/g, ''),
        listenPort: Number(listen[2]),
        ...(opts.advertiseHost ? { advertiseHost: opts.advertiseHost } : {}),
        lookupTimeoutMs: lookupTimeout * 1000,
        sysRoot: opts.sysRoot,
        devRoot: opts.devRoot,
        log: (line) => process.stdout.write(`${line}\n`),
      });
      await Promise.race([agent.start(), stopSignal]);
      await stopSignal;
      await agent.stop();
    });
}
