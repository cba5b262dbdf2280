import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { BaremetalApiError, BaremetalClient, httpTransport } from '../../src/compute/baremetal-client.js';
import type { TransportRequest } from '../../src/compute/baremetal-client.js';

describe('the bare-metal API client of the compute tier', () => {
  it('follows next links page by page, keeping only their path and query', async () => {
    const seen: TransportRequest[] = [];
    const client = new BaremetalClient(async (req) => {
      seen.push(req);
      const marker = new URL(req.path, 'http://x').searchParams.get('marker');
      if (marker === null) return { status: 200, body: JSON.stringify({ nodes: [{ uuid: 'a' }, { uuid: 'b' }], next: 'http://public.example:6385/v1/nodes?fields=uuid&limit=2&marker=b' }) };
      return { status: 200, body: JSON.stringify({ nodes: [{ uuid: 'c' }] }) };
    });
    const nodes = await client.listNodes(['uuid', 'resource_class'], { provision_state: 'available' }, 2);
    expect(nodes.map((n) => n.uuid)).toEqual(['a', 'b', 'c']);
    expect(seen.map((r) => r.path)).toEqual(['/v1/nodes?provision_state=available&fields=uuid%2Cresource_class&limit=2', '/v1/nodes?fields=uuid&limit=2&marker=b']);
  });

  it('turns an Ironic error body into an error with the status and the fault string', async () => {
    const client = new BaremetalClient(async () => ({ status: 409, body: JSON.stringify({ error_message: JSON.stringify({ faultstring: 'node x is already associated with instance y' }) }) }));
    const err = await client.patchNode('x', [{ op: 'add', path: '/instance_uuid', value: 'y' }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BaremetalApiError);
    expect(err).toMatchObject({ status: 409, message: 'bare-metal API PATCH /v1/nodes/x: 409 node x is already associated with instance y' });
  });

  it('sends the latest microversion and basic credentials over HTTP, and names an unreachable endpoint', async () => {
    let headers: Record<string, string | string[] | undefined> = {};
    const server = createServer((req, res) => {
      headers = req.headers;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ uuid: 'n1', provision_state: 'available' }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      const client = new BaremetalClient(httpTransport(`http://127.0.0.1:${port}/`, { username: 'nova', password: 'secret' }));
      expect(await client.getNode('n1', ['uuid', 'provision_state'])).toEqual({ uuid: 'n1', provision_state: 'available' });
      expect(headers['x-openstack-ironic-api-version']).toBe('latest');
      expect(headers.authorization).toBe(`Basic ${Buffer.from('nova:secret').toString('base64')}`);
    } finally {
      server.close();
    }
    const down = new BaremetalClient(httpTransport(`http://127.0.0.1:${port}`));
    await expect(down.getNode('n1')).rejects.toThrow(/cannot reach the bare-metal API at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED \(check \[baremetal\] endpoint\)/);
  });
});
