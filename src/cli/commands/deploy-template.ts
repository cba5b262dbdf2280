/**
 * `ironring deploy-template …`: deploy templates (named lists of deploy steps a deploy runs when its
 * instance asks for the trait of that name) through the API, like `baremetal deploy template`.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { UsageError } from '../../common/errors.js';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import { emit, renderRecord, renderTable } from '../output.js';
import { keyValues, objectFrom } from './node.js';

type TemplateJson = Record<string, unknown> & { uuid: string; name: string; steps?: unknown[]; extra?: Record<string, unknown> };

const collect = (value: string, previous: string[] = []) => [...previous, value];
const path = (ident: string) => `/v1/deploy_templates/${encodeURIComponent(ident)}`;
const STEPS_HELP = 'the deploy steps: a JSON list of {"interface", "step", "args", "priority"}, a file holding one, or - to read it from stdin';

/** A template as `show` prints it: its fields without the links. */
function shown(t: TemplateJson): Record<string, unknown> {
  const { links: _links, ...fields } = t;
  return fields;
}

/** `--steps`: JSON text, a file of it, or `-` for stdin (as `baremetal deploy template --steps`). */
function stepsFrom(raw: string): unknown {
  let text = raw;
  if (raw === '-') text = readFileSync(0, 'utf8');
  else if (!/^\s*[[{]/.test(raw)) {
    try {
      text = readFileSync(raw, 'utf8');
    } catch (err) {
      throw new UsageError(`--steps: not JSON, and no file ${JSON.stringify(raw)} to read (${(err as Error).message})`);
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UsageError(`--steps: invalid JSON: ${(err as Error).message}`);
  }
}

export function deployTemplateCommand(): Command {
  const template = new Command('deploy-template').description('manage deploy templates (deploy steps run for instances that ask for a trait) through the API (like `baremetal deploy template`)');

  withClientOptions(template.command('create').description('create a deploy template').argument('<name>', 'its name: a trait, CUSTOM_… or a standard one'))
    .requiredOption('--steps <json|file|->', STEPS_HELP)
    .option('--extra <key=value>', 'extra entry (repeatable)', collect)
    .option('--uuid <uuid>', 'template uuid (default: generated)')
    .action(async (name: string, opts: { steps: string; extra?: string[]; uuid?: string }, command: Command) => {
      const { base, format } = clientContext(command);
      const extra = objectFrom(opts.extra, 'extra');
      const body = { name, steps: stepsFrom(opts.steps), ...(extra !== undefined ? { extra } : {}), ...(opts.uuid !== undefined ? { uuid: opts.uuid } : {}) };
      const t = await apiRequest<TemplateJson>(base, 'POST', '/v1/deploy_templates', body);
      emit(format, t, () => renderRecord(shown(t)));
    });

  withClientOptions(template.command('list').description('list deploy templates'))
    .option('--long', 'show every field')
    .action(async (opts: { long?: boolean }, command: Command) => {
      const { base, format } = clientContext(command);
      const all: TemplateJson[] = [];
      let next: string | undefined = '/v1/deploy_templates?detail=True';
      while (next) {
        const page: { deploy_templates: TemplateJson[]; next?: string } = await apiRequest(base, 'GET', next);
        all.push(...page.deploy_templates);
        next = page.next ? page.next.replace(/^https?:\/\/[^/]+/, '') : undefined;
      }
      emit(format, all, () =>
        renderTable(all, [
          { header: 'UUID', value: (t) => t.uuid },
          { header: 'Name', value: (t) => t.name },
          ...(opts.long
            ? [
                { header: 'Steps', value: (t: TemplateJson) => t.steps },
                { header: 'Extra', value: (t: TemplateJson) => t.extra },
                { header: 'Created At', value: (t: TemplateJson) => t.created_at },
                { header: 'Updated At', value: (t: TemplateJson) => t.updated_at },
              ]
            : []),
        ]),
      );
    });

  withClientOptions(template.command('show').description('show one deploy template').argument('<template>', 'template name or uuid'))
    .action(async (ident: string, _opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const t = await apiRequest<TemplateJson>(base, 'GET', path(ident));
      emit(format, t, () => renderRecord(shown(t)));
    });

  withClientOptions(template.command('set').description('change deploy template fields').argument('<template>', 'template name or uuid'))
    .option('--name <trait>', 'new name (a trait)')
    .option('--steps <json|file|->', `replace ${STEPS_HELP}`)
    .option('--extra <key=value>', 'extra entry (repeatable)', collect)
    .action(async (ident: string, opts: { name?: string; steps?: string; extra?: string[] }, command: Command) => {
      const { base, format } = clientContext(command);
      const patch: Array<Record<string, unknown>> = [];
      if (opts.name !== undefined) patch.push({ op: 'replace', path: '/name', value: opts.name });
      if (opts.steps !== undefined) patch.push({ op: 'replace', path: '/steps', value: stepsFrom(opts.steps) });
      patch.push(...keyValues('extra', opts.extra, 'add'));
      if (patch.length === 0) throw new UsageError('deploy-template set: name at least one field to change (--name, --steps, --extra)');
      const t = await apiRequest<TemplateJson>(base, 'PATCH', path(ident), patch);
      emit(format, t, () => renderRecord(shown(t)));
    });

  withClientOptions(template.command('unset').description('remove extra entries of a deploy template').argument('<template>', 'template name or uuid'))
    .option('--extra <key>', 'extra key to remove (repeatable)', collect)
    .action(async (ident: string, opts: { extra?: string[] }, command: Command) => {
      const { base, format } = clientContext(command);
      const patch = keyValues('extra', opts.extra, 'remove');
      if (patch.length === 0) throw new UsageError('deploy-template unset: name at least one --extra key to remove (name and steps are required fields)');
      const t = await apiRequest<TemplateJson>(base, 'PATCH', path(ident), patch);
      emit(format, t, () => renderRecord(shown(t)));
    });

  withClientOptions(template.command('delete').description('delete deploy templates').argument('<template...>', 'template names or uuids'))
    .action(async (idents: string[], _opts: unknown, command: Command) => {
      const { base } = clientContext(command);
      for (const ident of idents) {
        await apiRequest(base, 'DELETE', path(ident));
        process.stdout.write(`Deleted deploy template ${ident}\n`);
      }
    });

  return template;
}
