/**
 * Scenario 2 of issue #8 — the seed's original failure, demonstrable on purpose: with discovery by
 * service off and periodic discovery off, compute services that join later take nodes on a ring
 * rebalance but were never mapped, so those nodes are unschedulable and the error says why. Turning
 * periodic discovery on (a scheduler that runs it, here even by compute node) heals it within one
 * interval, because a moved compute node is unmarked for discovery (Nova keeps it marked and never
 * notices the new host).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { ComputeDeployment, IMAGE, uuidsOwnedBy } from '../helpers/compute.js';
import { EVENTUALLY_MS, waitUntil } from '../helpers/conductors.js';
import { testEngines } from '../helpers/databases.js';

const engines = await testEngines();
const HOSTS = ['aio', 'c2', 'c3'];
const DISCOVER_INTERVAL = 2;

describe.each(engines)('the seed\'s race on %s', (engine) => {
  let deployment: ComputeDeployment;
  afterEach(() => deployment.close());

  it('makes a rebalanced node unschedulable with by-service and periodic discovery off, and periodic discovery heals it within one interval', async () => {
    deployment = new ComputeDeployment(engine, {
      IRONRING_SCHEDULER_DISCOVER_HOSTS_INTERVAL: '-1',
      IRONRING_SCHEDULER_DISCOVER_HOSTS_BY_SERVICE: 'false',
      // Nothing here dies: generous liveness, so a heartbeat late under load (SQLite, shared CI cores)
      // never hands a moved node back to its old host between the checks below.
      IRONRING_COMPUTE_SERVICE_DOWN_TIME: '10',
      IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: '10',
    });
    await deployment.up();
    // One compute service and its nodes, each of its own resource class so a server can ask for one.
    const owners = ['aio', 'c2', 'c3', 'aio'];
    const uuids = uuidsOwnedBy(HOSTS, owners);
    for (const [i, uuid] of uuids.entries()) await deployment.enroll(uuid, `seed-${i}`);
    await waitUntil(async () => [...(await deployment.computeNodes()).values()].filter((h) => h === 'aio').length === 4, EVENTUALLY_MS, 'aio to expose all four nodes');
    // Nova's day-zero workflow: discovery by compute node maps the one host that has nodes.
    const discovered = deployment.discoverHosts('--format', 'json');
    expect(discovered.code, discovered.stderr).toBe(0);
    expect((JSON.parse(discovered.stdout).mapped as Array<{ host: string }>).map((m) => m.host)).toEqual(['aio']);

    // Two more compute services join: the ring rebalances and nodes 1 and 2 move to them.
    await Promise.all([deployment.compute('c2'), deployment.compute('c3')]);
    await waitUntil(async () => {
      const exposed = await deployment.computeNodes();
      return uuids.every((u, i) => exposed.get(u) === owners[i]);
    }, EVENTUALLY_MS, 'the nodes to follow the ring');

    // A node that stayed on the mapped host is schedulable…
    const fine = await deployment.createActiveServer('seed-0');
    expect(fine).toMatchObject({ host: 'aio', node: uuids[0] });
    // …one that moved to a never-mapped host is not, and the error says why and what fixes it.
    const refused = await deployment.createServer('seed-1');
    expect(refused.status).toBe(409);
    expect(refused.text).toMatch(/host c2 is not mapped to any cell .*ironring manage cell discover-hosts --by-service/);
    const cli = runCli(['server', 'create', '--url', deployment.base, '--resource-class', 'seed-2', '--image-kernel', IMAGE.kernel, '--image-kernel-checksum', IMAGE.kernel_checksum, '--image-ramdisk', IMAGE.ramdisk, '--image-ramdisk-checksum', IMAGE.ramdisk_checksum]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/^ironring: 409 .*host c3 is not mapped to any cell/);
    const { json } = await deployment.request<{ servers: unknown[] }>('GET', '/compute/v1/servers');
    expect(json.servers).toHaveLength(1);

    // Turn periodic discovery on: a scheduler that runs it (by compute node, as Nova's periodic does).
    await deployment.scheduler('sched-2', { IRONRING_SCHEDULER_DISCOVER_HOSTS_INTERVAL: String(DISCOVER_INTERVAL) });
    // That it heals without anyone running discover-hosts is the point; how soon (one interval on
    // an idle machine) is logged, and discovery's own cost is bench/discover.ts's.
    const healed = await waitUntil(async () => (await deployment.services()).every((s) => s.host_mapped), EVENTUALLY_MS, 'c2 and c3 to be mapped');
    console.info(`[${engine}] seed race: periodic discovery mapped the rebalanced hosts ${healed} ms after the scheduler came up (interval ${DISCOVER_INTERVAL} s)`);
    for (const [i, host] of [[1, 'c2'], [2, 'c3']] as const) {
      const server = await deployment.createActiveServer(`seed-${i}`);
      expect(server).toMatchObject({ host, node: uuids[i] });
    }
  }, 240_000);
});
