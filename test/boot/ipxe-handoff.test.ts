/**
 * iPXE scripts meeting a hand-off mid-boot (issue #16): the machine chained the old owner's
 * `boot.ipxe` or per-node script, and the old owner then deleted the node's files (404) or stopped
 * (connection refused). The scripts ask DHCP again and chain whatever `boot.ipxe` it names now,
 * instead of rebooting; a count kept across chains still ends every path in a reboot.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderBootConfig, renderBootIpxe } from '../../src/boot/templates/index.js';
import { IPXE_RETRY } from '../../src/boot/templates/ipxe.js';
import type { BootConfigParams } from '../../src/boot/templates/index.js';
import { runIpxe } from './ipxe-sim.js';
import type { IpxeWorld } from './ipxe-sim.js';

const UUID = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123';
const MAC = '52:54:00:12:34:56';
const MAC_PATH = 'pxelinux.cfg/52-54-00-12-34-56';
const OLD = 'http://10.0.0.5:8080';
const NEW = 'http://10.0.0.6:8080';

/** One conductor's HTTP boot server as the machine sees it. */
interface Server {
  /** Whether it answers at all (false: stopped, connection refused). */
  up: boolean;
  /** Whether it still holds the node's files (false: deleted after the hand-off, 404). */
  hasNode: boolean;
}

const params = (httpUrl: string): BootConfigParams => ({ uuid: UUID, label: 'boot_ramdisk', labels: ['boot_ramdisk'], httpUrl, ramdiskParams: 'quiet' });

/**
 * The wire: servers by base URL, and who DHCP names after each `dhcp` (a function of how many
 * `dhcp`s ran before, so a test can make the new owner answer only from the second one on).
 */
function wire(servers: Record<string, Server>, dhcpNames: (nth: number) => string | null): IpxeWorld {
  let dhcps = 0;
  const serverOf = (url: string) => {
    const origin = new URL(url).origin;
    return { origin, server: servers[origin] };
  };
  return {
    settings: { 'net0/mac': MAC },
    fetch: (url) => {
      const { origin, server } = serverOf(url);
      if (server === undefined || !server.up) return false;
      const path = url.slice(origin.length);
      return path === '/boot.ipxe' || server.hasNode;
    },
    script: (url) => {
      const { origin } = serverOf(url);
      const path = url.slice(origin.length);
      if (path === '/boot.ipxe') return renderBootIpxe();
      if (path === `/${MAC_PATH}`) return renderBootConfig('ipxe', params(origin));
      return undefined;
    },
    dhcp: () => {
      const named = dhcpNames(dhcps++);
      return named === null ? null : { filename: `${named}/boot.ipxe` };
    },
  };
}

/** The origins the kernel and initrd of the boot came from. */
const bootedFrom = (downloads: string[]) => [...new Set(downloads.filter((u) => /\/(kernel|ramdisk)$/.test(u)).map((u) => new URL(u).origin))];

describe('iPXE scripts meeting a hand-off', () => {
  it('a per-node script whose files the old owner deleted asks DHCP and boots from the new owner, no reboot', () => {
    const servers = { [OLD]: { up: true, hasNode: false }, [NEW]: { up: true, hasNode: true } };
    const run = runIpxe(renderBootConfig('ipxe', params(OLD)), { ...wire(servers, () => NEW), url: `${OLD}/${MAC_PATH}` });
    expect(run.outcome).toBe('booted');
    // The first failure is retried from the same server (it may be transient); the second asks DHCP.
    expect(run.sleeps).toEqual([2, 4]);
    expect(run.dhcps).toBe(1);
    expect(run.chains).toEqual([`${NEW}/boot.ipxe`, `${NEW}/${MAC_PATH}`]);
    expect(bootedFrom(run.downloads.slice(-2))).toEqual([NEW]);
    expect(run.downloads.slice(-2)).toEqual([`${NEW}/${UUID}/kernel`, `${NEW}/${UUID}/ramdisk`]);
  });

  it('boot.ipxe of an old owner with no config for the machine (404) asks DHCP and chains the new owner\'s boot.ipxe', () => {
    const servers = { [OLD]: { up: true, hasNode: false }, [NEW]: { up: true, hasNode: true } };
    const run = runIpxe(renderBootIpxe(), { ...wire(servers, () => NEW), url: `${OLD}/boot.ipxe` });
    expect(run.outcome).toBe('booted');
    expect(run.downloads[0]).toBe(`${OLD}/${MAC_PATH}`);
    expect(run.sleeps).toEqual([2]);
    expect(run.dhcps).toBe(1);
    expect(run.chains).toEqual([`${OLD}/${MAC_PATH}`, `${NEW}/boot.ipxe`, `${NEW}/${MAC_PATH}`]);
    expect(bootedFrom(run.downloads)).toEqual([NEW]);
  });

  it('a stopped old owner (connection refused) and a new owner that answers DHCP only from the second ask: still boots, counting every try', () => {
    const servers = { [OLD]: { up: false, hasNode: true }, [NEW]: { up: true, hasNode: true } };
    // The first DHCP still names the old owner (a ProxyDHCP answer from before stays when nobody answers).
    const run = runIpxe(renderBootConfig('ipxe', params(OLD)), { ...wire(servers, (nth) => (nth === 0 ? OLD : NEW)), url: `${OLD}/${MAC_PATH}` });
    expect(run.outcome).toBe('booted');
    expect(run.sleeps).toEqual([2, 4, 8]);
    expect(run.dhcps).toBe(2);
    expect(run.chains).toEqual([`${OLD}/boot.ipxe`, `${NEW}/boot.ipxe`, `${NEW}/${MAC_PATH}`]);
    expect(bootedFrom(run.downloads.slice(-2))).toEqual([NEW]);
    expect(run.settings.ir_tries).toBe('3');
  });

  it('keeps its count and pause across chains: a failure after a chain continues the back-off, it does not start over', () => {
    // The new owner loses the node too (a second hand-off): its script fails and asks DHCP again.
    const servers = { [OLD]: { up: true, hasNode: false }, [NEW]: { up: true, hasNode: false } };
    const run = runIpxe(renderBootConfig('ipxe', params(OLD)), { ...wire(servers, () => NEW), url: `${OLD}/${MAC_PATH}` });
    expect(run.outcome).toBe('rebooted');
    // Without a count that survives `chain` each chained script would start at 2 seconds and 0 tries.
    expect(run.sleeps).toEqual([2, 4, 8, 16, 16]);
    expect(run.settings.ir_tries).toBe(String(IPXE_RETRY.attempts));
    expect(run.settings.ir_delay).toBe(String(IPXE_RETRY.maxDelaySeconds));
  });

  it('a machine that went through the retries and booted starts over with a full count after its reboot', () => {
    // Settings live until the machine reboots: a new power-on has none, so the scripts set them once.
    const servers = { [OLD]: { up: true, hasNode: true } };
    const run = runIpxe(renderBootIpxe(), { ...wire(servers, () => OLD), url: `${OLD}/boot.ipxe` });
    expect(run.outcome).toBe('booted');
    expect(run.settings).toMatchObject({ ir_tries: '0', ir_delay: '2' });
  });

  it('never loops for ever: whatever the servers and DHCP answer, every run boots or reboots within the tries', () => {
    const origins = [OLD, NEW, 'http://10.0.0.7:8080'];
    const server = fc.record({ up: fc.boolean(), hasNode: fc.boolean() });
    fc.assert(
      fc.property(
        fc.tuple(server, server, server),
        fc.array(fc.option(fc.constantFrom(...origins), { nil: null }), { minLength: 1, maxLength: 12 }),
        fc.constantFrom(...origins),
        fc.boolean(),
        ([a, b, c], answers, first, fromBootIpxe) => {
          const servers = { [origins[0]!]: a, [origins[1]!]: b, [origins[2]!]: c };
          const world = { ...wire(servers, (nth) => answers[nth % answers.length]!), url: fromBootIpxe ? `${first}/boot.ipxe` : `${first}/${MAC_PATH}` };
          const run = runIpxe(fromBootIpxe ? renderBootIpxe() : renderBootConfig('ipxe', params(first)), world, 5000);
          expect(['booted', 'rebooted']).toContain(run.outcome);
          expect(run.sleeps.length).toBeLessThanOrEqual(IPXE_RETRY.attempts);
          expect(run.dhcps).toBeLessThanOrEqual(IPXE_RETRY.attempts);
          if (run.outcome === 'booted') {
            // It booted the files of a server that was up and held them.
            const [origin] = bootedFrom(run.downloads.slice(-2));
            expect(servers[origin!]).toEqual({ up: true, hasNode: true });
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
