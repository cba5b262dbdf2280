/**
 * `ironring node vif list|attach|detach`, `ironring node inject-nmi`, `ironring node indicator
 * list|show|set` and `ironring node passthru list|call`: a node's VIFs (API 1.28), NMI (1.29),
 * indicators (1.63) and vendor methods, as the stock `baremetal node vif …`, `node inject nmi` and
 * `node passthru …` do. The API checks every value; its 400 names the bad one.
 */
import type { Command } from 'commander';
import { UsageError } from '../../common/errors.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import { emit, renderRecord, renderTable } from '../output.js';
import { objectFrom } from './node.js';

const nodePath = (ident: string, rest: string) => `/v1/nodes/${encodeURIComponent(ident)}/${rest}`;
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type HttpMethod = (typeof HTTP_METHODS)[number];

export function addNodeExtraCommands(node: Command): void {
  const vif = node.command('vif').description('list, attach or detach the VIFs of a node (recorded on its ports and port groups)');
  withClientOptions(vif.command('list').description("list a node's VIFs").argument('<node>', 'node uuid or name'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const { vifs } = await apiRequest<{ vifs: Array<{ id: string }> }>(base, 'GET', nodePath(ident, 'vifs'));
      emit(format, vifs, () => renderTable(vifs, [{ header: 'ID', value: (v) => v.id }]));
    });
  withClientOptions(vif.command('attach').description('attach a VIF to a free port or port group of a node').argument('<node>', 'node uuid or name').argument('<vif-id>', 'the VIF (a UUID or name)'))
    .option('--port-uuid <uuid>', 'attach to this port of the node')
    .option('--portgroup-uuid <uuid>', 'attach to this port group of the node')
    .option('--vif-info <key=value>', 'more information about the VIF (repeatable; passed on, not kept)', (v: string, p: string[] = []) => [...p, v])
    .action(async (ident: string, id: string, opts: { portUuid?: string; portgroupUuid?: string; vifInfo?: string[] }, command: Command) => {
      if (opts.portUuid !== undefined && opts.portgroupUuid !== undefined) throw new UsageError('--port-uuid and --portgroup-uuid: give one, not both');
      const { base } = clientContext(command);
      const body = {
        ...objectFrom(opts.vifInfo, 'vif-info'),
        id,
        ...(opts.portUuid !== undefined ? { port_uuid: opts.portUuid } : {}),
        ...(opts.portgroupUuid !== undefined ? { portgroup_uuid: opts.portgroupUuid } : {}),
      };
      await apiRequest(base, 'POST', nodePath(ident, 'vifs'), body);
      process.stdout.write(`Attached VIF ${id} to node ${ident}\n`);
    });
  withClientOptions(vif.command('detach').description('detach a VIF from a node').argument('<node>', 'node uuid or name').argument('<vif-id>', 'the VIF'))
    .action(async (ident: string, id: string, _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      await apiRequest(base, 'DELETE', nodePath(ident, `vifs/${encodeURIComponent(id)}`));
      process.stdout.write(`Detached VIF ${id} from node ${ident}\n`);
    });

  withClientOptions(node.command('inject-nmi').description('inject a non-maskable interrupt into a node (fake: recorded only; ipmi: ipmitool chassis power diag)').argument('<node>', 'node uuid or name'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      await apiRequest(base, 'PUT', nodePath(ident, 'management/inject_nmi'), {});
      process.stdout.write(`Injected an NMI into node ${ident}\n`);
    });

  const indicator = node.command('indicator').description("list, show or set a node's indicators (LEDs), named name@component");
  withClientOptions(indicator.command('list').description("list a node's indicators").argument('<node>', 'node uuid or name'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const { indicators } = await apiRequest<{ indicators: Array<{ name: string; component: string; readonly: boolean; states: string[] }> }>(base, 'GET', nodePath(ident, 'management/indicators'));
      emit(format, indicators, () => renderTable(indicators, [
        { header: 'Name', value: (i) => i.name },
        { header: 'Read-only', value: (i) => i.readonly },
        { header: 'States', value: (i) => i.states.join(', ') },
      ]));
    });
  withClientOptions(indicator.command('show').description("show an indicator's state").argument('<node>', 'node uuid or name').argument('<indicator>', 'name@component, e.g. led@system'))
    .action(async (ident: string, name: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const state = await apiRequest<Record<string, unknown>>(base, 'GET', nodePath(ident, `management/indicators/${encodeURIComponent(name)}`));
      emit(format, state, () => renderRecord(state));
    });
  withClientOptions(indicator.command('set').description('set an indicator').argument('<node>', 'node uuid or name').argument('<indicator>', 'name@component').argument('<state>', 'ON, OFF or BLINKING'))
    .action(async (ident: string, name: string, state: string, _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      await apiRequest(base, 'PUT', nodePath(ident, `management/indicators/${encodeURIComponent(name)}`), { state });
      process.stdout.write(`Set indicator ${name} of node ${ident} to ${state}\n`);
    });

  const passthru = node.command('passthru').description("list or call a node's vendor methods");
  withClientOptions(passthru.command('list').description("list a node's vendor methods").argument('<node>', 'node uuid or name'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const methods = await apiRequest<Record<string, { http_methods: string[]; async: boolean; description: string }>>(base, 'GET', nodePath(ident, 'vendor_passthru/methods'));
      const rows = Object.entries(methods).map(([name, m]) => ({ name, ...m }));
      emit(format, methods, () => renderTable(rows, [
        { header: 'Name', value: (r) => r.name },
        { header: 'Supported HTTP methods', value: (r) => r.http_methods.join(', ') },
        { header: 'Async', value: (r) => r.async },
        { header: 'Description', value: (r) => r.description },
      ]));
    });
  withClientOptions(passthru.command('call').description("call a node's vendor method").argument('<node>', 'node uuid or name').argument('<method>', 'the vendor method'))
    .option('--arg <key=value>', 'an argument of the method (repeatable; values are JSON when they parse)', (v: string, p: string[] = []) => [...p, v])
    .option('--http-method <method>', `the HTTP method: ${HTTP_METHODS.join(', ')} (default POST)`, 'POST')
    .action(async (ident: string, method: string, opts: { arg?: string[]; httpMethod: string }, command: Command) => {
      const http = opts.httpMethod.toUpperCase();
      if (!(HTTP_METHODS as readonly string[]).includes(http)) throw new UsageError(`--http-method: expected one of ${HTTP_METHODS.join(', ')}, got ${JSON.stringify(opts.httpMethod)}`);
      const { base, format } = clientContext(command);
      const args = objectFrom(opts.arg, 'arg') ?? {};
      const path = nodePath(ident, `vendor_passthru/${encodeURIComponent(method)}`);
      const value = await apiRequest<unknown>(base, http as HttpMethod, path, http === 'GET' || http === 'DELETE' ? undefined : args);
      // A method run in the background answers 202 with no body (read as {}).
      if (typeof value === 'object' && value !== null && Object.keys(value).length === 0) process.stdout.write(`Called vendor method ${method} on node ${ident}\n`);
      else emit(format, value, () => JSON.stringify(value));
    });
}
