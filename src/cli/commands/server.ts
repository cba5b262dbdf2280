/**
 * `ironring server …`: servers (instances on bare-metal nodes) through the compute API — create,
 * list, show, delete — table output by default, `--format json` for scripts.
 */
import { Command, Option } from 'commander';
import { ApiRequestFailed, apiRequest, clientContext, withClientOptions } from '../client.js';
import { emit, renderRecord, renderTable } from '../output.js';
import { FAILED_STATES, oneLine, POLL_MS, sleep, WaitFailed, waitSeconds, WaitTimedOut } from '../wait.js';
import type { WaitedNode } from '../wait.js';
import type { ServerView } from '../../compute/instances.js';

/** The API's shape of a server (a type only: the CLI loads no compute code). */
type ServerJson = ServerView;

/** Thrown when a server waited for ends in ERROR, or its node fails; exit code 1. */
export class ServerFailed extends WaitFailed {}

const waitOption = () =>
  new Option('--wait [seconds]', 'wait until the operation finishes (default 300 s); exit 1 with the reason on stderr as soon as the server or its node fails');

/** The one-line reason of a server's fault. */
const faultText = (s: ServerJson) => (s.fault ? oneLine(s.fault.message) : 'no reason given');

const record = (s: ServerJson) => ({
  id: s.id,
  name: s.name,
  status: s.status,
  resource_class: s.resource_class,
  host: s.host,
  node: s.node,
  cell: s.cell,
  fault: s.fault ? s.fault.message : null,
  created_at: s.created_at,
  updated_at: s.updated_at,
});

export function serverCommand(): Command {
  const server = new Command('server')
    .summary('create, list, show and delete servers (workloads on bare-metal nodes)')
    .description(
      'Servers through the compute API. `server create` asks for a node of a resource class: the scheduler picks a free ' +
        'available node whose compute service is live and whose host is mapped to a cell, and that compute service ' +
        'deploys the node (kernel + ramdisk) through the bare-metal API; the server goes BUILD → ACTIVE, or ERROR with ' +
        'the reason in `fault`. `server delete` undeploys the node (it is cleaned back to available) and removes the server.',
    );

  withClientOptions(server.command('create').description('create a server on a free node of a resource class'))
    .requiredOption('--resource-class <class>', 'resource class of the node to run on (the node\'s resource_class)')
    .requiredOption('--image-kernel <url>', 'kernel: file://, http:// or https:// URL')
    .requiredOption('--image-kernel-checksum <checksum>', 'kernel checksum: sha256:<hex>, sha512:<hex> or md5:<hex>')
    .requiredOption('--image-ramdisk <url>', 'ramdisk URL')
    .requiredOption('--image-ramdisk-checksum <checksum>', 'ramdisk checksum')
    .option('--name <name>', 'display name')
    .addOption(waitOption())
    .addHelpText(
      'after',
      '\nExample:\n  ironring server create --resource-class baremetal --name web-1 \\\n' +
        '    --image-kernel http://images.example.org/vmlinuz --image-kernel-checksum sha256:9f86d0… \\\n' +
        '    --image-ramdisk http://images.example.org/initrd.img --image-ramdisk-checksum sha256:60303a… --wait\n' +
        '\nWhen no node fits, the error says why — e.g. "host compute-2 is not mapped to any cell" with the command that fixes it.',
    )
    .action(async (opts: { resourceClass: string; imageKernel: string; imageKernelChecksum: string; imageRamdisk: string; imageRamdiskChecksum: string; name?: string; wait?: string | boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const wait = waitSeconds(opts.wait, 300);
      const body = {
        ...(opts.name !== undefined ? { name: opts.name } : {}),
        resource_class: opts.resourceClass,
        image: { kernel: opts.imageKernel, kernel_checksum: opts.imageKernelChecksum, ramdisk: opts.imageRamdisk, ramdisk_checksum: opts.imageRamdiskChecksum },
      };
      let s = await apiRequest<ServerJson>(base, 'POST', '/compute/v1/servers', body);
      let nodeFailed: string | null = null;
      if (wait !== null) {
        const deadline = Date.now() + wait * 1000;
        while (s.status === 'BUILD') {
          // The node's own failure ends the wait at once, even before the compute service records it.
          if (s.node) {
            const node = await apiRequest<WaitedNode>(base, 'GET', `/v1/nodes/${encodeURIComponent(s.node)}`);
            if (FAILED_STATES.has(node.provision_state)) {
              nodeFailed = `node ${s.node} is ${node.provision_state}: ${typeof node.last_error === 'string' && node.last_error ? oneLine(node.last_error) : 'no last_error given'}`;
              break;
            }
          }
          if (Date.now() > deadline) throw new WaitTimedOut(`server ${s.id} did not become ACTIVE within ${wait} s (still ${s.status} on node ${s.node})`);
          await sleep(POLL_MS);
          s = await apiRequest<ServerJson>(base, 'GET', `/compute/v1/servers/${s.id}`);
        }
      }
      const failed = wait !== null && (s.status === 'ERROR' || nodeFailed !== null);
      if (!failed || format === 'json') emit(format, s, () => renderRecord(record(s)));
      if (failed) throw new ServerFailed(`server ${s.id} failed: ${s.status === 'ERROR' ? faultText(s) : nodeFailed}`);
    });

  withClientOptions(server.command('list').description('list servers of every cell'))
    .action(async (_opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      // The API answers a page at a time ([api] max_limit); the next page starts after the last server.
      const servers: ServerJson[] = [];
      for (let marker: string | undefined; ; ) {
        const page = await apiRequest<{ servers: ServerJson[]; servers_links?: unknown[] }>(base, 'GET', `/compute/v1/servers${marker === undefined ? '' : `?marker=${encodeURIComponent(marker)}`}`);
        servers.push(...page.servers);
        marker = page.servers.at(-1)?.id;
        if (page.servers_links === undefined || marker === undefined) break;
      }
      emit(format, servers, () =>
        renderTable(servers, [
          { header: 'ID', value: (s) => s.id },
          { header: 'Name', value: (s) => s.name },
          { header: 'Status', value: (s) => s.status },
          { header: 'Resource Class', value: (s) => s.resource_class },
          { header: 'Host', value: (s) => s.host },
          { header: 'Node', value: (s) => s.node },
        ]),
      );
    });

  withClientOptions(server.command('show').description('show one server').argument('<id>', 'server uuid'))
    .action(async (id: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const s = await apiRequest<ServerJson>(base, 'GET', `/compute/v1/servers/${encodeURIComponent(id)}`);
      emit(format, s, () => renderRecord({ ...record(s), vm_state: s.vm_state, task_state: s.task_state, image: s.image }));
    });

  withClientOptions(server.command('delete').description('delete servers: undeploy their nodes and remove them').argument('<ids...>', 'server uuids'))
    .addOption(waitOption())
    .action(async (ids: string[], opts: { wait?: string | boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const wait = waitSeconds(opts.wait, 300);
      const deleted: string[] = [];
      for (const id of ids) {
        await apiRequest(base, 'DELETE', `/compute/v1/servers/${encodeURIComponent(id)}`);
        if (wait !== null) {
          const deadline = Date.now() + wait * 1000;
          for (;;) {
            try {
              await apiRequest(base, 'GET', `/compute/v1/servers/${encodeURIComponent(id)}`);
            } catch (err) {
              if (err instanceof ApiRequestFailed && /^404 /.test(err.message)) break;
              throw err;
            }
            if (Date.now() > deadline) throw new WaitTimedOut(`server ${id} was not deleted within ${wait} s`);
            await sleep(POLL_MS);
          }
        }
        deleted.push(id);
      }
      emit(format, { deleted }, () => deleted.map((id) => `${wait !== null ? 'Deleted' : 'Requested deletion of'} server ${id}`).join('\n'));
    });

  return server;
}
