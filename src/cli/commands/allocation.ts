/**
 * `ironring allocation …`: allocations (a request for a node of a resource class, which a conductor
 * fulfils) through the API, like `baremetal allocation`. `create --wait` polls until the
 * allocation is active (exit 0) or failed (exit 1 with its last_error).
 */
import { Command } from 'commander';
import { UsageError } from '../../common/errors.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import type { ApiEndpoint } from '../client.js';
import { emit, renderRecord, renderTable } from '../output.js';
import { POLL_MS, WaitFailed, WaitTimedOut, oneLine, sleep, waitSeconds } from '../wait.js';
import { keyValues, objectFrom } from './node.js';

type AllocationJson = Record<string, unknown> & { uuid: string; name: string | null; state: string; node_uuid: string | null; last_error: string | null };

const collect = (value: string, previous: string[] = []) => [...previous, value];
const path = (ident: string) => `/v1/allocations/${encodeURIComponent(ident)}`;

/** An allocation as `show` prints it: its fields without the links. */
function shown(a: AllocationJson): Record<string, unknown> {
  const { links: _links, ...fields } = a;
  return fields;
}

/** Polls allocation `ident` until it is no longer `allocating`; a failed one throws with its last_error. */
async function waitForAllocation(base: ApiEndpoint, ident: string, seconds: number): Promise<AllocationJson> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const a = await apiRequest<AllocationJson>(base, 'GET', path(ident));
    if (a.state === 'error') throw new WaitFailed(`allocation ${a.uuid} failed: ${oneLine(a.last_error ?? 'no last_error given')}`);
    if (a.state !== 'allocating') return a;
    if (Date.now() > deadline) throw new WaitTimedOut(`allocation ${a.uuid} was not fulfilled within ${seconds} s (still allocating)`);
    await sleep(POLL_MS);
  }
}

export function allocationCommand(): Command {
  const allocation = new Command('allocation').description('manage allocations (requests for a node of a resource class) through the API (like `baremetal allocation`)');

  withClientOptions(allocation.command('create').description('ask for a node: a conductor picks a free one that matches, or backfill a deployed node with --node'))
    .option('--resource-class <class>', 'resource class the node must have (required unless --node is given)')
    .option('--trait <trait>', 'trait the node must have (repeatable)', collect)
    .option('--candidate-node <node>', 'name or uuid of a node it may take (repeatable; default any)', collect)
    .option('--name <name>', 'unique name of the allocation')
    .option('--uuid <uuid>', 'allocation uuid (default: generated)')
    .option('--extra <key=value>', 'extra entry (repeatable)', collect)
    .option('--owner <owner>', 'owning project (free text)')
    .option('--node <node>', 'backfill: a deployed (active) node to record the allocation for')
    .option('--wait [seconds]', 'wait until the allocation is fulfilled (default 60 s): exit 0 when active, exit 1 with its last_error as soon as it fails')
    .action(async (opts: { resourceClass?: string; trait?: string[]; candidateNode?: string[]; name?: string; uuid?: string; extra?: string[]; owner?: string; node?: string; wait?: string | boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      if (opts.resourceClass === undefined && opts.node === undefined) throw new UsageError('allocation create: give --resource-class, or --node to backfill a deployed node');
      const seconds = waitSeconds(opts.wait, 60);
      const extra = objectFrom(opts.extra, 'extra');
      const body = {
        ...(opts.resourceClass !== undefined ? { resource_class: opts.resourceClass } : {}),
        ...(opts.trait !== undefined ? { traits: opts.trait } : {}),
        ...(opts.candidateNode !== undefined ? { candidate_nodes: opts.candidateNode } : {}),
        ...(opts.name !== undefined ? { name: opts.name } : {}),
        ...(opts.uuid !== undefined ? { uuid: opts.uuid } : {}),
        ...(extra !== undefined ? { extra } : {}),
        ...(opts.owner !== undefined ? { owner: opts.owner } : {}),
        ...(opts.node !== undefined ? { node: opts.node } : {}),
      };
      let a = await apiRequest<AllocationJson>(base, 'POST', '/v1/allocations', body);
      if (seconds !== null) a = await waitForAllocation(base, a.uuid, seconds);
      emit(format, a, () => renderRecord(shown(a)));
    });

  withClientOptions(allocation.command('list').description('list allocations'))
    .option('--node <node>', 'only the allocation of this node (name or uuid)')
    .option('--resource-class <class>', 'only allocations for this resource class')
    .option('--state <state>', 'only allocations in this state (allocating, active, error)')
    .option('--owner <owner>', 'only allocations of this owner')
    .option('--long', 'show every field')
    .action(async (opts: { node?: string; resourceClass?: string; state?: string; owner?: string; long?: boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const query = new URLSearchParams();
      if (opts.node !== undefined) query.set('node', opts.node);
      if (opts.resourceClass !== undefined) query.set('resource_class', opts.resourceClass);
      if (opts.state !== undefined) query.set('state', opts.state);
      if (opts.owner !== undefined) query.set('owner', opts.owner);
      const all: AllocationJson[] = [];
      let next: string | undefined = `/v1/allocations${query.size > 0 ? `?${query.toString()}` : ''}`;
      while (next) {
        const page: { allocations: AllocationJson[]; next?: string } = await apiRequest(base, 'GET', next);
        all.push(...page.allocations);
        next = page.next ? page.next.replace(/^https?:\/\/[^/]+/, '') : undefined;
      }
      emit(format, all, () =>
        renderTable(all, [
          { header: 'UUID', value: (a) => a.uuid },
          { header: 'Name', value: (a) => a.name },
          { header: 'Resource Class', value: (a) => a.resource_class },
          { header: 'State', value: (a) => a.state },
          { header: 'Node UUID', value: (a) => a.node_uuid },
          ...(opts.long
            ? [
                { header: 'Last Error', value: (a: AllocationJson) => a.last_error },
                { header: 'Traits', value: (a: AllocationJson) => a.traits },
                { header: 'Candidate Nodes', value: (a: AllocationJson) => a.candidate_nodes },
                { header: 'Owner', value: (a: AllocationJson) => a.owner },
                { header: 'Extra', value: (a: AllocationJson) => a.extra },
                { header: 'Created At', value: (a: AllocationJson) => a.created_at },
                { header: 'Updated At', value: (a: AllocationJson) => a.updated_at },
              ]
            : []),
        ]),
      );
    });

  withClientOptions(allocation.command('show').description('show one allocation').argument('<allocation>', 'allocation name or uuid'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const a = await apiRequest<AllocationJson>(base, 'GET', path(ident));
      emit(format, a, () => renderRecord(shown(a)));
    });

  for (const [verb, op] of [['set', 'add'], ['unset', 'remove']] as const) {
    withClientOptions(allocation.command(verb).description(verb === 'set' ? 'change an allocation\'s name or extra' : 'remove an allocation\'s name or extra entries').argument('<allocation>', 'allocation name or uuid'))
      .option(verb === 'set' ? '--name <name>' : '--name', verb === 'set' ? 'new name' : 'remove the name')
      .option(`--extra <${verb === 'set' ? 'key=value' : 'key'}>`, 'extra entry (repeatable)', collect)
      .action(async (ident: string, opts: { name?: string | boolean; extra?: string[] }, command: Command) => {
        const { base, format } = clientContext(command);
        const patch: Array<Record<string, unknown>> = [];
        if (opts.name !== undefined) patch.push(op === 'remove' ? { op, path: '/name' } : { op, path: '/name', value: opts.name });
        patch.push(...keyValues('extra', opts.extra, op));
        if (patch.length === 0) throw new UsageError(`allocation ${verb}: name at least one field to ${verb === 'set' ? 'change' : 'remove'}`);
        const a = await apiRequest<AllocationJson>(base, 'PATCH', path(ident), patch);
        emit(format, a, () => renderRecord(shown(a)));
      });
  }

  withClientOptions(allocation.command('delete').description('delete allocations, freeing their nodes (not while a node is deployed, unless it is in maintenance)').argument('<allocation...>', 'allocation names or uuids'))
    .action(async (idents: string[], _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      for (const ident of idents) {
        await apiRequest(base, 'DELETE', path(ident));
        process.stdout.write(`Deleted allocation ${ident}\n`);
      }
    });

  return allocation;
}
