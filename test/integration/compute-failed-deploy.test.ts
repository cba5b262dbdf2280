/**
 * Issue #14 items 14 and 15, through real processes (`ironring up` and the `ironring` CLI): a node
 * whose deploy fails (its boot images answer 404) keeps `target_provision_state = active`, as in
 * Ironic. A server on it goes to ERROR with a Nova-shaped fault at once (it stayed BUILD forever), and
 * deleting it tears the node down to available and ends (it stayed DELETING forever). `--wait` of the
 * node and server commands returns as soon as the node fails, exit 1 with the reason on one line of
 * stderr (it waited out its whole timeout).
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import type { CliResult } from '../helpers/cli.js';
import { ComputeDeployment } from '../helpers/compute.js';
import type { ServerJson } from '../helpers/compute.js';
import { waitUntil } from '../helpers/conductors.js';

const SUM = `sha256:${'cd'.repeat(32)}`;

/** The CLI as a real process, without blocking this process (it serves the images). */
async function runCli(args: string[]): Promise<CliResult> {
  const proc = startCli(args);
  const code = await proc.exited;
  return { code, stdout: proc.stdout(), stderr: proc.stderr() };
}

describe('a node whose deploy fails, under ironring up', () => {
  let deployment: ComputeDeployment;
  let images: Server;
  let imageBase: string;

  beforeAll(async () => {
    // Every image URL answers 404: the conductor's image cache fails the deploy within a second.
    images = createServer((_req, res) => res.writeHead(404).end('not here'));
    await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
    imageBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
    deployment = new ComputeDeployment('sqlite', { IRONRING_SCHEDULER_DISCOVER_HOSTS_INTERVAL: '1' });
    await deployment.up();
  }, 90_000);
  afterAll(async () => {
    await deployment?.close();
    await new Promise((resolve) => images?.close(resolve));
  });

  /** An available fake-hardware node that network-boots (pxe) from images that do not exist. */
  async function enrollFailing(resourceClass: string): Promise<string> {
    const uuid = randomUUID();
    const created = await deployment.request('POST', '/v1/nodes', {
      uuid,
      driver: 'fake-hardware',
      boot_interface: 'pxe',
      resource_class: resourceClass,
      driver_info: { deploy_kernel: `${imageBase}/deploy.kernel`, deploy_kernel_checksum: SUM, deploy_ramdisk: `${imageBase}/deploy.initrd`, deploy_ramdisk_checksum: SUM },
    });
    expect(created.status, created.text).toBe(201);
    const mac = `52:54:00:${uuid.slice(0, 2)}:${uuid.slice(2, 4)}:${uuid.slice(4, 6)}`;
    const port = await deployment.request('POST', '/v1/ports', { node_uuid: uuid, address: mac, pxe_enabled: true });
    expect(port.status, port.text).toBe(201);
    for (const [target, state] of [['manage', 'manageable'], ['provide', 'available']] as const) {
      const res = await deployment.request('PUT', `/v1/nodes/${uuid}/states/provision`, { target });
      expect(res.status, res.text).toBe(202);
      await waitUntil(async () => (await node(uuid)).provision_state === state, 30_000, `${uuid} to be ${state}`);
    }
    return uuid;
  }

  async function node(uuid: string) {
    return (await deployment.request<{ provision_state: string; target_provision_state: string | null; instance_uuid: string | null; last_error: string | null }>('GET', `/v1/nodes/${uuid}`)).json;
  }

  const image = () => ({ kernel: `${imageBase}/vmlinuz`, kernel_checksum: SUM, ramdisk: `${imageBase}/initrd`, ramdisk_checksum: SUM });

  it('puts the server in ERROR with a fault, and its delete tears the node down to available and ends', async () => {
    const uuid = await enrollFailing('failing');
    await waitUntil(async () => (await deployment.computeNodes()).has(uuid), 20_000, 'the node to be exposed');
    await waitUntil(async () => (await deployment.services()).some((s) => s.host === 'aio' && s.host_mapped), 20_000, 'aio to be mapped');

    const res = await deployment.createServer('failing', 'doomed', image());
    expect(res.status, res.text).toBe(202);
    const id = res.json.id;
    let server: ServerJson | null = null;
    await waitUntil(async () => (server = await deployment.server(id))?.status !== 'BUILD', 30_000, `server ${id} to leave BUILD`);
    const failed = await node(uuid);
    // The defect's precondition: a failed node keeps its target, as in Ironic.
    expect(failed).toMatchObject({ provision_state: 'deploy failed', target_provision_state: 'active', instance_uuid: id });
    expect(server).toMatchObject({ status: 'ERROR', node: uuid });
    const fault = server!.fault!;
    expect(fault.code).toBe(500);
    expect(fault.message).toContain(`deploy of node ${uuid} failed`);
    expect(fault.message).toContain(failed.last_error!);
    expect(Number.isNaN(Date.parse(fault.created))).toBe(false);

    const del = await deployment.request<ServerJson>('DELETE', `/compute/v1/servers/${id}`);
    expect(del.status, del.text).toBe(202);
    await waitUntil(async () => (await deployment.server(id)) === null, 30_000, `server ${id} to be deleted`);
    expect(await node(uuid)).toMatchObject({ provision_state: 'available', target_provision_state: null, instance_uuid: null });
  }, 120_000);

  it('server create --wait exits 1 with the reason on one line as soon as the node fails', async () => {
    const uuid = await enrollFailing('failing-cli');
    await waitUntil(async () => (await deployment.computeNodes()).has(uuid), 20_000, 'the node to be exposed');
    const img = image();
    const started = Date.now();
    const res = await runCli([
      'server', 'create', '--url', deployment.base, '--resource-class', 'failing-cli', '--name', 'doomed-cli', '--wait', '120',
      '--image-kernel', img.kernel, '--image-kernel-checksum', img.kernel_checksum, '--image-ramdisk', img.ramdisk, '--image-ramdisk-checksum', img.ramdisk_checksum,
    ]);
    const took = Date.now() - started;
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toMatch(/^ironring: server [0-9a-f-]{36} failed: .*deploy failed.*\n$/);
    expect(res.stderr.split('\n')).toHaveLength(2);
    expect(took).toBeLessThan(60_000);
    // The server it made is deleted with --wait, and the node is available again.
    const listed = JSON.parse((await runCli(['server', 'list', '--url', deployment.base, '--format', 'json'])).stdout) as Array<{ id: string; node: string }>;
    const mine = listed.find((s) => s.node === uuid)!;
    const del = await runCli(['server', 'delete', mine.id, '--url', deployment.base, '--wait', '60']);
    expect(del.code, del.stderr).toBe(0);
    expect(await node(uuid)).toMatchObject({ provision_state: 'available', instance_uuid: null });
  }, 120_000);

  it('node deploy --wait exits 1 with last_error on one line of stderr as soon as the deploy fails', async () => {
    const uuid = await enrollFailing('failing-node');
    const set = await runCli(['node', 'set', uuid, '--url', deployment.base, '--instance-info', `kernel=${imageBase}/k`, '--instance-info', `kernel_checksum=${SUM}`, '--instance-info', `ramdisk=${imageBase}/r`, '--instance-info', `ramdisk_checksum=${SUM}`]);
    expect(set.code, set.stderr).toBe(0);
    const started = Date.now();
    const res = await runCli(['node', 'deploy', uuid, '--url', deployment.base, '--wait', '600']);
    const took = Date.now() - started;
    expect(res.code, res.stderr).toBe(1);
    const failed = await node(uuid);
    expect(failed).toMatchObject({ provision_state: 'deploy failed', target_provision_state: 'active' });
    expect(res.stderr).toBe(`ironring: deploy of node ${uuid} failed: deploy failed (expected active): ${failed.last_error!.replace(/\s*\n\s*/g, ' ')}\n`);
    expect(res.stdout).toBe('');
    expect(took).toBeLessThan(30_000);

    // --format json still gives scripts the node on stdout; undeploy --wait succeeds with exit 0.
    const again = await runCli(['node', 'deploy', uuid, '--url', deployment.base, '--wait', '600', '--format', 'json']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ uuid, provision_state: 'deploy failed' });
    const undeploy = await runCli(['node', 'undeploy', uuid, '--url', deployment.base, '--wait', '60']);
    expect(undeploy.code, undeploy.stderr).toBe(0);
    expect(undeploy.stdout).toBe(`node ${uuid} is available\n`);
  }, 120_000);
});
