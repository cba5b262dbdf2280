/**
 * Inspection rules (the subset of Ironic's 1.96 format ironring takes): what is refused when a
 * rule is created, how conditions read the inventory, and what the actions change.
 */
import { describe, expect, it } from 'vitest';
import { interpolate, parseInspectionRule, RuleFailed, runInspectionRules } from '../../src/nodes/inspection-rules.js';
import type { InspectionRule, RuleContext } from '../../src/nodes/inspection-rules.js';

const ctx = (): RuleContext => ({
  inventory: { cpu: { count: 64, architecture: 'x86_64' }, system_vendor: { manufacturer: 'Dell Inc.', product_name: 'PowerEdge R650' }, disks: [{ name: '/dev/sda', size: 960e9 }], bmc_address: null },
  plugin_data: {},
  node: { uuid: 'n1', resource_class: null, properties: { cpus: 64, capabilities: 'boot_mode:uefi' }, extra: {}, driver_info: {} },
});

const rule = (body: Record<string, unknown>, uuid = 'r1'): InspectionRule => ({ uuid, ...parseInspectionRule(body) }) as InspectionRule;

describe('parseInspectionRule', () => {
  it('accepts Ironic\'s forms: args as object or list, inverted ops, defaults', () => {
    const parsed = parseInspectionRule({
      description: 'big Dells',
      conditions: [{ op: 'gt', args: { values: ['{inventory[cpu][count]}', 32] } }, { op: '!is-none', args: ['{inventory[system_vendor][manufacturer]}'] }],
      actions: [{ op: 'set-attribute', args: ['/resource_class', 'baremetal-large'] }],
    });
    expect(parsed).toMatchObject({ description: 'big Dells', priority: 0, phase: 'main', sensitive: false });
    expect(parsed.conditions).toHaveLength(2);
  });

  it('refuses what it does not take, naming the field', () => {
    const bad: Array<[unknown, RegExp]> = [
      [{ conditions: [] }, /actions: at least one action is required/],
      [{ actions: [{ op: 'set-port-attribute', args: ['/pxe_enabled', false] }] }, /actions\[0\]\.op: unsupported action "set-port-attribute"/],
      [{ actions: [{ op: 'add-trait', args: ['custom_lower'] }] }, /actions\[0\]\.args\.name: invalid trait "custom_lower"/],
      [{ actions: [{ op: 'remove-trait', args: { name: 'CUSTOM_' } }] }, /actions\[0\]\.args\.name: invalid trait/],
      [{ actions: [{ op: 'fail' }] }, /actions\[0\]\.args: missing required argument\(s\): msg/],
      [{ actions: [{ op: 'fail', args: { msg: 'x', why: 1 } }] }, /unexpected argument\(s\): why/],
      [{ actions: [{ op: 'set-attribute', args: ['/driver', 'x'] }] }, /not a node field rules may change/],
      [{ actions: [{ op: 'set-attribute', args: ['/properties/__proto__', 'x'] }] }, /must name a key under \/properties/],
      [{ conditions: [{ op: 'matches', args: ['{inventory}', '('] }], actions: [{ op: 'fail', args: ['x'] }] }, /invalid regular expression/],
      [{ conditions: [{ op: 'eq', args: { values: [1, 1] }, loop: [1] }], actions: [{ op: 'fail', args: ['x'] }] }, /no loops/],
      [{ priority: 10000, actions: [{ op: 'fail', args: ['x'] }] }, /priority: an integer from 0 to 9999/],
      [{ phase: 'early', actions: [{ op: 'fail', args: ['x'] }] }, /phase/],
      [{ name: 'x', actions: [{ op: 'fail', args: ['x'] }] }, /name: not a field of an inspection rule/],
    ];
    for (const [body, message] of bad) expect(() => parseInspectionRule(body), JSON.stringify(body)).toThrow(message);
  });
});

describe('runInspectionRules', () => {
  it('sets the resource class, properties, capabilities and extra of the nodes whose inventory matches', () => {
    const rules = [
      rule({
        conditions: [{ op: 'gt', args: { values: ['{inventory[cpu][count]}', 32] } }, { op: 'contains', args: ['{inventory[system_vendor][product_name]}', 'R6[0-9]0'] }],
        actions: [
          { op: 'set-attribute', args: ['/resource_class', 'baremetal-large'] },
          { op: 'set-attribute', args: ['/properties/vendor', '{inventory[system_vendor][manufacturer]}'] },
          { op: 'set-capability', args: ['cpu_vt', 'true'] },
          { op: 'extend-attribute', args: { path: '/extra/tags', value: 'dell', unique: true } },
          { op: 'extend-attribute', args: { path: '/extra/tags', value: 'dell', unique: true } },
          { op: 'log', args: ['{node.uuid} has {inventory[cpu][count]} CPUs'] },
          { op: 'add-trait', args: ['CUSTOM_BIG'] },
          { op: 'add-trait', args: { name: 'HW_CPU_X86_VMX' } },
          { op: 'remove-trait', args: ['CUSTOM_SMALL'] },
          { op: 'remove-trait', args: ['HW_CPU_X86_VMX'] },
        ],
      }),
      rule({ conditions: [{ op: 'eq', args: { values: ['{inventory[cpu][architecture]}', 'aarch64'] } }], actions: [{ op: 'fail', args: ['no arm here'] }] }, 'r2'),
    ];
    const out = runInspectionRules(rules, ctx());
    expect(out.applied).toEqual(['r1']);
    expect(out.changes).toEqual({
      resource_class: 'baremetal-large',
      properties: { cpus: 64, capabilities: 'boot_mode:uefi,cpu_vt:true', vendor: 'Dell Inc.' },
      extra: { tags: ['dell'] },
    });
    expect(out.log).toEqual(['r1: n1 has 64 CPUs']);
    // The last word on a trait wins.
    expect(out.traits).toEqual({ add: ['CUSTOM_BIG'], remove: ['CUSTOM_SMALL', 'HW_CPU_X86_VMX'] });
  });

  it('fails with the rule\'s message, and runs the highest priority first', () => {
    const failing = rule({ description: 'refuse small', conditions: [{ op: 'lt', args: { values: ['{inventory[cpu][count]}', 128] } }], actions: [{ op: 'fail', args: ['only {inventory[cpu][count]} CPUs'] }] });
    expect(() => runInspectionRules([failing], ctx())).toThrow(RuleFailed);
    expect(() => runInspectionRules([failing], ctx())).toThrow('inspection rule refuse small: only 64 CPUs');
    const first = rule({ priority: 5, actions: [{ op: 'set-attribute', args: ['/properties/order', 'low'] }] }, 'low');
    const second = rule({ priority: 50, actions: [{ op: 'set-attribute', args: ['/properties/order', 'high'] }] }, 'high');
    // Highest first, so the lower priority rule's value is the one left.
    expect(runInspectionRules([first, second], ctx()).changes.properties).toMatchObject({ order: 'low' });
  });

  it('reads conditions as Ironic does: is-none, is-empty, one-of, matches the whole value, ! inverts', () => {
    const when = (conditions: unknown[]) => runInspectionRules([rule({ conditions, actions: [{ op: 'log', args: ['x'] }] })], ctx()).applied.length === 1;
    expect(when([{ op: 'is-none', args: ['{inventory[bmc_address]}'] }])).toBe(true);
    expect(when([{ op: 'is-empty', args: ['{plugin_data}'] }])).toBe(true);
    expect(when([{ op: 'one-of', args: ['{inventory[cpu][architecture]}', ['x86_64', 'aarch64']] }])).toBe(true);
    expect(when([{ op: 'matches', args: ['{inventory[system_vendor][product_name]}', 'PowerEdge'] }])).toBe(false);
    expect(when([{ op: 'matches', args: ['{inventory[system_vendor][product_name]}', 'PowerEdge.*'] }])).toBe(true);
    expect(when([{ op: '!eq', args: { values: ['{inventory[cpu][count]}', 64] } }])).toBe(false);
    expect(when([{ op: 'is-true', args: ['yes'] }, { op: 'is-false', args: [0] }])).toBe(true);
  });

  it('interpolates references, keeping a lone one\'s type and leaving unknown ones as written', () => {
    const c = ctx();
    expect(interpolate('{inventory[cpu][count]}', c)).toBe(64);
    expect(interpolate('{inventory[cpu][count]} CPUs', c)).toBe('64 CPUs');
    expect(interpolate('{inventory[nope]}', c)).toBe('{inventory[nope]}');
    expect(interpolate('{inventory[__proto__]}', c)).toBe('{inventory[__proto__]}');
    expect(interpolate('{process.env}', c)).toBe('{process.env}');
    expect(interpolate(['{inventory[disks][0][name]}'], c)).toEqual(['/dev/sda']);
  });
});
