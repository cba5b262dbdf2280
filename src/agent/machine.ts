/**
 * What the agent asks of the machine it runs on: its Ethernet MACs (to look the node up by), the
 * local address that routes to the API (its callback URL), and powering it off.
 */
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The MACs of the machine's Ethernet interfaces (ARPHRD_ETHER, type 1), loopback excluded. */
export async function localMacs(sysRoot = '/sys'): Promise<string[]> {
  const dir = join(sysRoot, 'class', 'net');
  const macs: string[] = [];
  for (const name of (await readdir(dir).catch(() => [] as string[])).sort()) {
    if (name === 'lo') continue;
    const type = (await readFile(join(dir, name, 'type'), 'latin1').catch(() => '')).trim();
    const mac = (await readFile(join(dir, name, 'address'), 'latin1').catch(() => '')).trim().toLowerCase();
    if (type === '1' && /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(mac) && mac !== '00:00:00:00:00:00') macs.push(mac);
  }
  return macs;
}

/** The local address the kernel would use to reach `host:port` (no packet is sent). */
export async function routeSource(host: string, port: number): Promise<string> {
  const family = host.includes(':') ? 'udp6' : 'udp4';
  const socket = dgram.createSocket(family);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(port, host.replace(/^\[|\]$/g, ''), () => resolve());
    });
    return socket.address().address;
  } finally {
    socket.close();
  }
}

/** `poweroff -f` (busybox), or the kernel's sysrq `o` when there is none. */
export async function defaultPowerOff(): Promise<void> {
  const ok = await new Promise<boolean>((resolve) => {
    const child = spawn('poweroff', ['-f'], { stdio: 'ignore' });
    child.on('error', () => resolve(false));
    child.on('exit', (code) => resolve(code === 0));
  });
  if (!ok) {
    await writeFile('/proc/sysrq-trigger', 'o');
  }
}
