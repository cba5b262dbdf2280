/**
 * The deploy template field table (Ironic's `/v1/deploy_templates`, API 1.55), in the form of the
 * chassis table, and the shape of a deploy step — shared by a template's `steps` and by the
 * `deploy_steps` of a deploy request (API 1.69): `{interface, step, args, priority}`, all four
 * required, nothing else, as Ironic's `DEPLOY_STEP_SCHEMA`.
 *
 * Whether a node's interfaces offer a step is not known here: that is checked when a node is
 * deployed (`conductor/deploy-steps.ts`), as in Ironic, so a template may name any step.
 */
import { Type } from 'typebox';
import { InvalidParameter } from '../common/errors.js';
import { cloneJson, isForbiddenKey } from '../common/json-safety.js';
import { maskSecrets } from '../common/mask.js';
import type { DeployTemplateRow, DeployTemplateStep } from '../db/schema.js';
import { FieldTable, shownValue, UUID_INPUT } from './field-table.js';
import type { FieldSpec } from './field-table.js';
import { checkTrait } from './traits.js';
import type { ResourceLink } from './chassis-fields.js';

export type { DeployTemplateRow, DeployTemplateStep };

/** The interfaces a deploy step may belong to (Ironic's `DEPLOYING_INTERFACE_PRIORITY` keys). */
export const DEPLOY_STEP_INTERFACES = ['power', 'management', 'deploy', 'bios', 'raid'] as const;
/** Most steps one template (or one deploy request) may hold: ironring's bound, Ironic has none. */
export const MAX_DEPLOY_STEPS = 50;
/** Highest step priority accepted (Ironic stores it in a 32-bit integer column). */
export const MAX_STEP_PRIORITY = 2147483647;
/** Longest step name accepted (Ironic's column is 255 characters). */
const MAX_STEP_NAME = 255;

const STEP_KEYS = ['interface', 'step', 'args', 'priority'] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * One deploy step, checked (400 naming `where` and the key): `interface` one of
 * `DEPLOY_STEP_INTERFACES`, `step` a non-empty name, `args` an object, `priority` an integer ≥ 0 or
 * a string of digits (stored as the integer, as Ironic does). Returns a copy without prototypes.
 */
export function checkDeployStep(value: unknown, where: string): DeployTemplateStep {
  if (!isObject(value)) throw new InvalidParameter(`${where}: expected an object with interface, step, args and priority`);
  for (const key of Object.keys(value)) {
    if (!(STEP_KEYS as readonly string[]).includes(key)) throw new InvalidParameter(`${where}: unexpected key ${shownValue(key)}; a deploy step has interface, step, args and priority`);
  }
  for (const key of STEP_KEYS) if (value[key] === undefined) throw new InvalidParameter(`${where}.${key}: required`);
  const { interface: iface, step, args, priority } = value;
  if (typeof iface !== 'string' || !(DEPLOY_STEP_INTERFACES as readonly string[]).includes(iface)) {
    throw new InvalidParameter(`${where}.interface: expected one of ${DEPLOY_STEP_INTERFACES.join(', ')}, got ${shownValue(iface)}`);
  }
  if (typeof step !== 'string' || step === '' || step.length > MAX_STEP_NAME) throw new InvalidParameter(`${where}.step: expected a step name (a non-empty string of at most ${MAX_STEP_NAME} characters), got ${shownValue(step)}`);
  if (!isObject(args)) throw new InvalidParameter(`${where}.args: expected an object, got ${shownValue(args)}`);
  for (const key of Object.keys(args)) if (isForbiddenKey(key)) throw new InvalidParameter(`${where}.args: the key ${shownValue(key)} is not accepted`);
  const number = typeof priority === 'string' && /^[0-9]+$/.test(priority) ? Number(priority) : priority;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < 0 || number > MAX_STEP_PRIORITY) {
    throw new InvalidParameter(`${where}.priority: expected an integer from 0 (disabled) to ${MAX_STEP_PRIORITY}, or a string of its digits, got ${shownValue(priority)}`);
  }
  return { interface: iface, step, args: cloneJson(args), priority: number };
}

/**
 * A list of deploy steps, checked: at least one, at most `MAX_DEPLOY_STEPS`, each by
 * `checkDeployStep`, and no two with the same interface and step (Ironic's `duplicate_steps`).
 */
export function checkDeploySteps(value: unknown, field: string): DeployTemplateStep[] {
  if (!Array.isArray(value) || value.length === 0) throw new InvalidParameter(`${field}: expected a non-empty list of {"interface", "step", "args", "priority"} objects`);
  if (value.length > MAX_DEPLOY_STEPS) throw new InvalidParameter(`${field}: ${value.length} steps; at most ${MAX_DEPLOY_STEPS} are accepted`);
  const steps = value.map((s, i) => checkDeployStep(s, `${field}[${i}]`));
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  for (const s of steps) {
    const id = `interface: ${s.interface}, step: ${s.step}`;
    if (seen.has(id)) duplicates.add(id);
    seen.add(id);
  }
  if (duplicates.size > 0) {
    throw new InvalidParameter(`${field}: duplicate deploy steps; a list cannot have two deploy steps with the same interface and step. Duplicates: ${[...duplicates].join('; ')}`);
  }
  return steps;
}

/** What the view needs beyond the row: the API's links. */
export interface DeployTemplateFieldContext {
  links: (collection: string, id: string) => ResourceLink[];
}

/** A trait name, as `checkTrait` says (refine gets a string that passed the schema). */
const isTrait = (v: unknown): boolean => {
  try {
    checkTrait(v, 'name');
    return true;
  } catch {
    return false;
  }
};

const DEPLOY_TEMPLATE_FIELD_ROWS: Readonly<Record<string, FieldSpec<DeployTemplateRow, DeployTemplateFieldContext>>> = {
  uuid: {
    since: [1, 55], column: 'uuid',
    input: UUID_INPUT,
  },
  name: {
    since: [1, 55], column: 'name',
    input: {
      schema: Type.String({ minLength: 1, maxLength: 255 }),
      expected: (v) => `invalid trait ${shownValue(v)}; a deploy template's name is a trait: CUSTOM_ then A-Z, 0-9 and _, or a standard trait (COMPUTE_, HW_, MISC_, OWNER_, STORAGE_), at most 255 characters`,
      create: { required: 'required, a trait such as CUSTOM_RAID1' },
      patch: true,
      refine: isTrait,
    },
  },
  // Checked by `checkDeploySteps` (normalize), patched by `applyStepsPatch`: a list the table's
  // JSON-object patching does not walk.
  steps: {
    since: [1, 55], column: 'steps',
    view: (t) => t.steps.map((s) => ({ interface: s.interface, step: s.step, args: maskSecrets(s.args), priority: s.priority })),
    reads: ['steps'],
    input: {
      schema: Type.Array(Type.Unknown()),
      expected: 'expected a non-empty list of {"interface", "step", "args", "priority"} objects',
      create: { required: 'required, a non-empty list of {"interface", "step", "args", "priority"} objects' },
      patch: true,
      normalize: (v) => checkDeploySteps(v, 'steps'),
    },
  },
  extra: {
    since: [1, 55], column: 'extra',
    input: {
      schema: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
      expected: 'expected a JSON object', create: true, patch: true, json: true,
      normalize: (v) => v ?? {},
    },
  },
  created_at: { since: [1, 55], column: 'created_at', view: 'time' },
  updated_at: { since: [1, 55], column: 'updated_at', view: 'time' },
  links: { since: [1, 55], view: (t, ctx) => ctx.links('deploy_templates', t.uuid), reads: ['uuid'] },
};

export const DEPLOY_TEMPLATE_FIELDS = new FieldTable<DeployTemplateRow, DeployTemplateFieldContext>(DEPLOY_TEMPLATE_FIELD_ROWS, {
  noun: 'deploy template',
  cannotChange: (path, readOnly) => `${path}: cannot be changed on a deploy template${readOnly ? '' : ' (no such field)'}; name, steps and extra can`,
});

/** Fields of a list without `detail`, as Ironic's (`DEFAULT_RETURN_FIELDS`, plus `links`). */
export const DEPLOY_TEMPLATE_LIST_FIELDS = ['uuid', 'name', 'links'] as const;
