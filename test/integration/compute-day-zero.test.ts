/**
 * Scenario 1 of issue #8 — the seed's day zero, which Nova gets wrong (shared/seeds/000): three
 * compute services and no nodes; one `discover-hosts --by-service` maps all three; then nodes are
 * enrolled one at a time and each is schedulable at once, with no further discovery, wherever the
 * ring puts it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ComputeDeployment, uuidsOwnedBy } from '../helpers/compute.js';
import { waitUntil } from '../helpers/conductors.js';
import { testEngines } from '../helpers/databases.js';

const engines = await testEngines();
const HOSTS = ['aio', 'c2', 'c3'];

describe.each(engines)('day zero on %s', (engine) => {
  let deployment: ComputeDeployment;
  afterEach(() => deployment.close());

  it('maps three compute services with no nodes, then every node enrolled one at a time is schedulable at once', async () => {
    // Periodic discovery off: only the one discovery run at config time maps anything.
    deployment = new ComputeDeployment(engine, { IRONRING_SCHEDULER_DISCOVER_HOSTS_INTERVAL: '-1' });
    await deployment.up();
    await Promise.all([deployment.compute('c2'), deployment.compute('c3')]);
    await waitUntil(async () => (await deployment.services()).filter((s) => s.state === 'up').length === 3, 20_000, 'three live compute services');
    expect((await deployment.services()).map((s) => [s.host, s.host_mapped, s.nodes]).sort()).toEqual([['aio', false, 0], ['c2', false, 0], ['c3', false, 0]]);

    // Day zero, no nodes yet: discovery by node maps nothing (Nova's trap), by service maps all three.
    const byNode = deployment.discoverHosts('--format', 'json');
    expect(byNode.code, byNode.stderr).toBe(0);
    expect(JSON.parse(byNode.stdout).mapped).toEqual([]);
    const byService = deployment.discoverHosts('--by-service', '--format', 'json');
    expect(byService.code, byService.stderr).toBe(0);
    expect((JSON.parse(byService.stdout).mapped as Array<{ host: string }>).map((m) => m.host).sort()).toEqual(HOSTS);

    // Nodes chosen so that the ring spreads them over every service, the first on a service other
    // than the one that would have been mapped by node.
    const owners = ['c2', 'aio', 'c3', 'c2', 'c3'];
    const uuids = uuidsOwnedBy(HOSTS, owners);
    const timings: number[] = [];
    for (const [i, uuid] of uuids.entries()) {
      await deployment.enroll(uuid, 'baremetal');
      const started = Date.now();
      await waitUntil(async () => (await deployment.computeNodes()).get(uuid) === owners[i], 20_000, `${uuid} exposed by ${owners[i]}`);
      // The only available node is the one just enrolled: the server must land on it and go active.
      const server = await deployment.createActiveServer('baremetal');
      timings.push(Date.now() - started);
      expect(server).toMatchObject({ status: 'ACTIVE', node: uuid, host: owners[i] });
    }
    console.info(`[${engine}] day zero: enrolled → exposed → server ACTIVE in ${timings.join(', ')} ms`);

    const { json } = await deployment.request<{ servers: Array<{ id: string; host: string }> }>('GET', '/compute/v1/servers');
    expect(json.servers.map((s) => s.host).sort()).toEqual([...owners].sort());
    // No discovery ran since day zero, yet nothing was ever unmapped.
    expect((await deployment.services()).every((s) => s.host_mapped)).toBe(true);
    for (const s of json.servers) await deployment.deleteServer(s.id);
    const nodes = await deployment.request<{ nodes: Array<{ provision_state: string; instance_uuid: string | null }> }>('GET', '/v1/nodes?fields=provision_state,instance_uuid');
    expect(nodes.json.nodes.every((n) => n.provision_state === 'available' && n.instance_uuid === null)).toBe(true);

    // Graceful stops exit 0.
    for (const host of ['c2', 'c3', 'aio']) {
      const p = deployment.processes.get(host)!;
      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
    }
  }, 240_000);
});
