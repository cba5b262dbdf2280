/**
 * A real peer drives `ironring agent`: Debian's OpenStack Ironic 21.4 (`ironic-api` and
 * `ironic-conductor` from ironic-common, SQLite, noauth, JSON-RPC) deploys a whole-disk image with
 * its own `direct` deploy interface through ironring's `Agent`, which runs in this process with a
 * fake /sys whose one disk is a file. Ironic looks the agent up, takes its heartbeats, issues its
 * own sequence of IPA commands (deploy steps, `standby.prepare_image`, polling, `standby.sync`…)
 * and ends `active`; the file holds the image. That is the agent speaking IPA's protocol as Ironic
 * itself expects it, not as ironring's conductor does.
 *
 * The node's hardware type is Ironic's `manual-management` (fake power, no-op management, the PXE
 * boot interface writing its files with no DHCP) with `deploy_forces_oob_reboot`, so Ironic powers
 * the "machine" off through its fake power interface rather than asking the agent; the agent's own
 * power-off is a no-op here in any case.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { fakeMachine } from '../helpers/fake-machine.js';
import { enrollIronicNode, startIronic } from '../helpers/ironic.js';
import type { RunningIronic } from '../helpers/ironic.js';
import { requirePeer } from '../helpers/peers.js';

const MIB = 1024 * 1024;
const MAC = '52:54:00:1c:00:01';

const available = requirePeer('ironic-conductor', 'ironic-common');

describe.skipIf(!available)('Ironic 21.4 deploys an image through ironring agent (IPA protocol)', () => {
  let ironic: RunningIronic;
  let imageServer: http.Server;

  beforeAll(async () => {
    ironic = await startIronic();
  }, 150_000);

  afterAll(async () => {
    await ironic?.stop();
    await new Promise<void>((r) => (imageServer ? imageServer.close(() => r()) : r()));
  }, 60_000);

  it('looks the agent up, sends it IPA commands, and ends active with the image on the disk', async () => {
    // The machine: one 64 MiB disk, a file standing for /dev/vda.
    const machine = await fakeMachine(join(ironic.dir, 'machine'), 64 * MIB);
    // The image: an MBR with a partition entry and the boot signature, then random bytes.
    const image = randomBytes(6 * MIB + 512);
    image.fill(0, 446, 510);
    image[446 + 4] = 0x83;
    image.writeUInt32LE(2048, 446 + 8);
    image.writeUInt32LE(4096, 446 + 12);
    image[510] = 0x55;
    image[511] = 0xaa;
    const digest = createHash('sha256').update(image).digest('hex');
    // The deploy kernel and ramdisk Ironic's PXE boot interface stages (never booted here).
    const files: Record<string, Buffer> = { '/disk.raw': image, '/deploy.kernel': Buffer.from('kernel'), '/deploy.initramfs': Buffer.from('initramfs') };
    imageServer = http.createServer((req, res) => {
      const body = files[req.url ?? ''];
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' }).end(req.method === 'HEAD' ? undefined : body);
    });
    await new Promise<void>((r) => imageServer.listen(0, '127.0.0.1', r));
    const files_ = `http://127.0.0.1:${(imageServer.address() as net.AddressInfo).port}`;
    const imageUrl = `${files_}/disk.raw`;

    const uuid = await enrollIronicNode(ironic, 'interop-1', MAC, { kernel: `${files_}/deploy.kernel`, ramdisk: `${files_}/deploy.initramfs` }, { image_source: imageUrl, image_os_hash_algo: 'sha256', image_os_hash_value: digest, image_disk_format: 'raw', root_device: { name: '/dev/vda' } });
    expect((await ironic.call('PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'active' })).status).toBe(202);
    const waiting = await ironic.until(uuid, ['wait call-back', 'deploy failed'], 60_000);
    expect(waiting.provision_state, waiting.last_error ?? '').toBe('wait call-back');

    const lines: string[] = [];
    let poweredOff = 0;
    const agent = new Agent({
      apiUrl: ironic.url,
      macs: [MAC],
      listenHost: '127.0.0.1',
      listenPort: 0,
      advertiseHost: '127.0.0.1',
      sysRoot: machine.sysRoot,
      devRoot: machine.devRoot,
      lookupIntervalMs: 200,
      heartbeatIntervalMs: 1000,
      powerOff: async () => void (poweredOff += 1),
      writeOptions: { retryDelayMs: 10, direct: false },
      log: (line) => lines.push(line),
    });
    void agent.start().catch((err: unknown) => lines.push(`start failed: ${(err as Error).message}`));
    try {
      const done = await ironic.until(uuid, ['active', 'deploy failed'], 90_000);
      expect(done.provision_state, `${done.last_error}\nagent:\n${lines.join('\n')}`).toBe('active');
    } finally {
      await agent.stop();
    }
    expect(agent.nodeUuid).toBe(uuid);
    const disk = await readFile(machine.disk);
    expect(createHash('sha256').update(disk.subarray(0, image.length)).digest('hex')).toBe(digest);
    expect(disk[image.length]).toBe(0x11);
    // Ironic's own command sequence, as the agent ran it: its deploy steps, the write as the
    // write_image deploy step, the partition UUIDs, a sync; then Ironic powered off out of band.
    const ran = lines.map((l) => / command (\S+) \(\S+\) succeeded/.exec(l)?.[1]).filter((c): c is string => c !== undefined);
    expect(ran).toEqual(['deploy.get_deploy_steps', 'deploy.execute_deploy_step', 'standby.get_partition_uuids', 'standby.sync']);
    expect(lines.some((l) => / failed/.test(l))).toBe(false);
    expect(poweredOff).toBe(0);
    console.log(`Ironic 21.4 drove ironring agent to active: ${ran.join(', ')}`);
  }, 240_000);
});
