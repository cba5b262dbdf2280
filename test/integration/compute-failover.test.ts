/**
 * Scenario 3 of issue #8 — what Nova strands: kill -9 a compute service that holds nodes with
 * servers. Its nodes and its servers move to live services once it is past service_down_time, and
 * deleting those servers works (their new host undeploys the nodes). Also: with periodic discovery
 * by service on, compute services that register are mapped within one interval with zero nodes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ComputeDeployment, SERVICE_DOWN_TIME, UPDATE_RESOURCES_INTERVAL, uuidsOwnedBy } from '../helpers/compute.js';
import type { ServerJson } from '../helpers/compute.js';
import { EVENTUALLY_MS, waitUntil } from '../helpers/conductors.js';
import { testEngines } from '../helpers/databases.js';

const engines = await testEngines();
const HOSTS = ['aio', 'c2', 'c3'];
const DISCOVER_INTERVAL = 1;

describe.each(engines)('a compute service killed on %s', (engine) => {
  let deployment: ComputeDeployment;
  afterEach(() => deployment.close());

  it('hands its nodes and servers to live services, and their servers can be deleted', async () => {
    deployment = new ComputeDeployment(engine, { IRONRING_SCHEDULER_DISCOVER_HOSTS_INTERVAL: String(DISCOVER_INTERVAL) });
    await deployment.up();
    await Promise.all([deployment.compute('c2'), deployment.compute('c3')]);
    // Periodic discovery by service maps the new services before they have any node.
    const mapping = await waitUntil(async () => {
      const services = await deployment.services();
      return services.length === 3 && services.every((s) => s.host_mapped && s.nodes === 0);
    }, EVENTUALLY_MS, 'the scheduler to map c2 and c3 with zero nodes');
    console.info(`[${engine}] failover: c2 and c3 mapped ${mapping} ms after they came up (discovery every ${DISCOVER_INTERVAL} s)`);

    const owners = ['c2', 'aio', 'c2', 'c3', 'c2', 'aio'];
    const uuids = uuidsOwnedBy(HOSTS, owners);
    for (const uuid of uuids) await deployment.enroll(uuid, 'baremetal');
    await waitUntil(async () => {
      const exposed = await deployment.computeNodes();
      return uuids.every((u, i) => exposed.get(u) === owners[i]);
    }, EVENTUALLY_MS, 'the nodes to be exposed by their ring owners');
    const servers: ServerJson[] = [];
    for (let i = 0; i < uuids.length; i++) servers.push(await deployment.createActiveServer('baremetal'));
    const onVictim = servers.filter((s) => s.host === 'c2');
    expect(onVictim.map((s) => s.node).sort()).toEqual([uuids[0], uuids[2], uuids[4]].sort());

    deployment.processes.get('c2')!.child.kill('SIGKILL');
    const killed = Date.now();
    await waitUntil(async () => {
      const exposed = await deployment.computeNodes();
      const now = await Promise.all(onVictim.map((s) => deployment.server(s.id)));
      return [...exposed.values()].every((h) => h !== 'c2') && now.every((s) => s !== null && s.host !== 'c2' && s.host === exposed.get(s.node!));
    }, EVENTUALLY_MS, 'c2\'s nodes and servers to move');
    // How soon (service_down_time + one update_resources_interval on an idle machine) is logged, not asserted.
    const tookOver = Date.now() - killed;
    console.info(`[${engine}] failover: c2's ${onVictim.length} nodes and servers moved ${tookOver} ms after kill -9 (service_down_time ${SERVICE_DOWN_TIME} s, update_resources_interval ${UPDATE_RESOURCES_INTERVAL} s)`);

    // The servers stay ACTIVE on their new hosts, and the new hosts tear them down on delete.
    for (const s of onVictim) expect((await deployment.server(s.id))!.status).toBe('ACTIVE');
    await Promise.all(onVictim.map((s) => deployment.deleteServer(s.id)));
    const nodes = await deployment.request<{ nodes: Array<{ uuid: string; provision_state: string; instance_uuid: string | null }> }>('GET', '/v1/nodes?fields=uuid,provision_state,instance_uuid');
    for (const n of nodes.json.nodes.filter((n) => onVictim.some((s) => s.node === n.uuid))) expect(n).toMatchObject({ provision_state: 'available', instance_uuid: null });
    // The others were never disturbed.
    for (const s of servers.filter((x) => x.host !== 'c2')) expect(await deployment.server(s.id)).toMatchObject({ status: 'ACTIVE', host: s.host });

    // A graceful stop hands over at once, without waiting for service_down_time.
    const c3 = deployment.processes.get('c3')!;
    const onC3 = servers.filter((s) => s.host === 'c3');
    expect(onC3.length).toBeGreaterThan(0);
    // Up first (a loaded machine may have delayed a report past service_down_time for a moment).
    await waitUntil(async () => (await deployment.services()).find((s) => s.host === 'c3')?.state === 'up', EVENTUALLY_MS, 'c3 to be up');
    c3.child.kill('SIGTERM');
    const stopped = Date.now();
    expect(await c3.exited).toBe(0);
    // What makes it not wait, whatever the machine's speed: the service is down the moment the
    // process is gone (its row marked down as it stops), where a crash stays up for service_down_time.
    expect((await deployment.services()).find((s) => s.host === 'c3')?.state).toBe('down');
    await waitUntil(async () => {
      const now = await Promise.all(onC3.map((s) => deployment.server(s.id)));
      return now.every((s) => s?.host === 'aio') && [...(await deployment.computeNodes()).values()].every((h) => h === 'aio');
    }, EVENTUALLY_MS, 'c3\'s nodes and servers to move to aio');
    const handover = Date.now() - stopped;
    console.info(`[${engine}] failover: c3's nodes and servers moved ${handover} ms after SIGTERM`);
  }, 240_000);
});
