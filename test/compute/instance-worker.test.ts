/**
 * The instance worker against a scripted bare-metal API: node states the real conductor reaches
 * only by a failing tear-down (which fake hardware cannot do), so the delete of every server ends.
 * The happy and deploy-failed paths run through real processes in
 * test/integration/compute-failed-deploy.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { BaremetalClient } from '../../src/compute/baremetal-client.js';
import type { Transport } from '../../src/compute/baremetal-client.js';
import { InstanceWorker } from '../../src/compute/instance-worker.js';
import { useMigratedDatabase } from '../helpers/databases.js';

const NODE = '11111111-2222-4333-8444-555555555555';
const INSTANCE = '99999999-8888-4777-8666-555555555555';

interface FakeNode {
  provision_state: string;
  target_provision_state: string | null;
  instance_uuid: string | null;
  last_error: string | null;
}

/** A bare-metal API holding one node; `onUndeploy` says where a `deleted` request leaves it. */
function fakeApi(node: FakeNode, onUndeploy: (n: FakeNode) => void) {
  const calls: string[] = [];
  const transport: Transport = async ({ method, path, body }) => {
    calls.push(`${method} ${path.split('?')[0]}${body && method === 'PUT' ? ` ${(body as { target: string }).target}` : ''}`);
    if (method === 'GET') return { status: 200, body: JSON.stringify({ uuid: NODE, maintenance: false, ...node }) };
    if (method === 'PUT') {
      onUndeploy(node);
      return { status: 202, body: '' };
    }
    if (method === 'PATCH') {
      node.instance_uuid = null;
      return { status: 200, body: JSON.stringify({ uuid: NODE, ...node }) };
    }
    return { status: 404, body: '' };
  };
  return { client: new BaremetalClient(transport), calls };
}

describe('the instance worker', () => {
  const db = useMigratedDatabase('sqlite');

  async function instance(vmState: string, taskState: string | null) {
    await db.store.db
      .insertInto('instances')
      .values({ uuid: INSTANCE, host: 'c1', node: NODE, vm_state: vmState, task_state: taskState, resource_class: 'baremetal', image: JSON.stringify({}) as never })
      .execute();
  }
  const worker = (client: BaremetalClient) => new InstanceWorker({ host: 'c1', cell: db.store, api: db.store, baremetal: client, logger: pino({ level: 'silent' }) });
  const row = () => db.store.db.selectFrom('instances').selectAll().where('uuid', '=', INSTANCE).executeTakeFirst();

  it('fails a building server whose node failed, although the node still targets active', async () => {
    await instance('building', 'spawning');
    const { client } = fakeApi({ provision_state: 'deploy failed', target_provision_state: 'active', instance_uuid: INSTANCE, last_error: 'cannot download image x: HTTP 404' }, () => undefined);
    expect(await worker(client).spawnStep((await row())!)).toBe('failed');
    const failed = (await row())!;
    expect(failed).toMatchObject({ vm_state: 'error', task_state: null });
    expect(JSON.parse(failed.fault!)).toMatchObject({ message: `deploy of node ${NODE} failed (deploy failed): cannot download image x: HTTP 404`, code: 500 });
  });

  it('undeploys once; a node whose tear-down fails again is let go of and the server ends', async () => {
    await instance('error', 'deleting');
    // The tear-down fails every time: the node is back in error (as a failed deleting leaves it).
    const { client, calls } = fakeApi({ provision_state: 'error', target_provision_state: null, instance_uuid: INSTANCE, last_error: 'power off failed' }, (n) => {
      n.provision_state = 'error';
      n.last_error = 'power off failed again';
    });
    const w = worker(client);
    const steps: string[] = [];
    for (let r = await row(); r && steps.length < 5; r = await row()) steps.push(await w.deleteStep(r));
    expect(steps).toEqual(['undeploy-requested', 'released', 'deleted']);
    expect(await row()).toBeUndefined();
    expect(calls.filter((c) => c.startsWith('PUT'))).toEqual([`PUT /v1/nodes/${NODE}/states/provision deleted`]);
    expect(calls.filter((c) => c.startsWith('PATCH'))).toHaveLength(1);
  });

  it('lets go of a node in clean failed (which undeploy cannot leave) and ends the delete', async () => {
    await instance('active', 'deleting');
    const { client, calls } = fakeApi({ provision_state: 'clean failed', target_provision_state: 'available', instance_uuid: INSTANCE, last_error: 'clean step failed' }, () => undefined);
    await worker(client).pass();
    expect(await row()).toBeUndefined();
    expect(calls.some((c) => c.startsWith('PUT'))).toBe(false);
  });
});
