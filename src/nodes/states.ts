/**
 * The vocabulary of a node's life: provision states, power states, the provision actions the API
 * accepts and the events conductors fire. Names are exactly those the Ironic API shows and accepts
 * (OpenStack Ironic 21.4, API 1.1–1.82), so scripts and the stock `baremetal` CLI work unchanged.
 *
 * Behaviour (which event moves which state where) lives in `state-machine.ts`; this file only names
 * things. Every enumeration is an `as const` array with a union type derived from it.
 */

/** An API microversion as `[major, minor]`; structurally the same as the API layer's `Microversion`. */
export type ApiVersion = readonly [major: number, minor: number];

/**
 * Every provision state a node can be in, as `provision_state` shows it. Ironic's `deploy hold`,
 * `clean hold` and `service*` states came with API 1.85/1.87 (after 21.4) and are not modelled;
 * `rebuild`, `deleted` and `deploy complete` are verbs or Juno-era targets, never a node's state.
 */
export const PROVISION_STATES = [
  'enroll',
  'verifying',
  'manageable',
  'inspecting',
  'inspect wait',
  'inspect failed',
  'cleaning',
  'clean wait',
  'clean failed',
  'available',
  'deploying',
  'wait call-back',
  'deploy failed',
  'active',
  'deleting',
  'error',
  'rescuing',
  'rescue wait',
  'rescue',
  'rescue failed',
  'unrescuing',
  'unrescue failed',
  'adopting',
  'adopt failed',
] as const;
/** A provision state name. */
export type ProvisionState = (typeof PROVISION_STATES)[number];

/**
 * Stable states: a node stays in them until someone asks for something. Nodes here have no
 * `target_provision_state`.
 */
export const STABLE_STATES = ['enroll', 'manageable', 'available', 'active', 'error', 'rescue'] as const;
/** A stable provision state; the only kind a target provision state can name. */
export type StableState = (typeof STABLE_STATES)[number];

/**
 * States in which a conductor is doing the work right now: the work runs in the memory of the
 * conductor holding the node's lock, so a node found here unlocked has nobody working on it (its
 * conductor died or stopped, or restarted). Ironic fails such "stuck" states outright; here the
 * node's owner resumes the work, and fails it only where resuming is not safe (docs/takeover.md,
 * "Work left behind").
 */
export const WORKING_STATES = [
  'verifying',
  'inspecting',
  'cleaning',
  'deploying',
  'deleting',
  'rescuing',
  'unrescuing',
  'adopting',
] as const;

/** States in which a conductor waits for the node (its ramdisk calls back) or a timeout. */
export const WAITING_STATES = ['inspect wait', 'clean wait', 'wait call-back', 'rescue wait'] as const;

/** States a failed operation leaves a node in, until an operator retries or backs out. */
export const FAILURE_STATES = [
  'inspect failed',
  'clean failed',
  'deploy failed',
  'rescue failed',
  'unrescue failed',
  'adopt failed',
] as const;

/** How a state behaves: stable, conductor at work, waiting on the node, or failed. */
export type StateKind = 'stable' | 'working' | 'waiting' | 'failed';

/**
 * What a node network-boots from its conductor's boot files while in a state: `deploy` — the
 * deploy ramdisk (cleaning, inspection, a deploy under way or waiting for its ramdisk to call
 * back); `instance` — the instance's own kernel and ramdisk; `rescue` — the rescue agent; `none` —
 * nothing of its conductor's (powered off, booting from its disk, or not yet set up for booting).
 */
export const BOOT_NEEDS = ['none', 'deploy', 'instance', 'rescue'] as const;
/** What a node boots from its conductor in one provision state. */
export type BootNeed = (typeof BOOT_NEEDS)[number];

/**
 * The `target` strings `PUT /v1/nodes/{node}/states/provision` accepts. Several are spellings of
 * one event: `active` and `deploy` (1.73+) start a deployment, `deleted` and `undeploy` (1.73+)
 * tear one down — the stock client still sends `active` and `deleted`.
 */
export const PROVISION_ACTIONS = [
  'manage',
  'provide',
  'inspect',
  'clean',
  'active',
  'deploy',
  'rebuild',
  'deleted',
  'undeploy',
  'abort',
  'adopt',
  'rescue',
  'unrescue',
] as const;
/** A provision action as the API accepts it. */
export type ProvisionAction = (typeof PROVISION_ACTIONS)[number];

/**
 * The name ironring uses for each action in messages and docs. One name per event: `deploy` and
 * `undeploy` read better than their legacy spellings, which stay accepted.
 */
export const CANONICAL_ACTIONS = [
  'manage',
  'provide',
  'inspect',
  'clean',
  'deploy',
  'rebuild',
  'undeploy',
  'abort',
  'adopt',
  'rescue',
  'unrescue',
] as const satisfies readonly ProvisionAction[];
/** A provision action under its canonical name. */
export type CanonicalAction = (typeof CANONICAL_ACTIONS)[number];

/** Events an operator triggers through the API (Ironic's verbs). */
export const ACTION_EVENTS = [
  'manage',
  'provide',
  'inspect',
  'clean',
  'deploy',
  'rebuild',
  'delete',
  'abort',
  'adopt',
  'rescue',
  'unrescue',
] as const;
/** An event an API action fires. */
export type ActionEvent = (typeof ACTION_EVENTS)[number];

/**
 * Events only a conductor fires as work progresses: finished, failed, now waiting on the node,
 * resumed after the node called back. (`manage` and `clean` are also fired by conductors, from
 * `cleaning` and `deleting`; the machine's table says which side may fire each transition.)
 */
export const CONDUCTOR_EVENTS = ['done', 'fail', 'wait', 'resume'] as const;
/** An event only conductors fire. */
export type ConductorEvent = (typeof CONDUCTOR_EVENTS)[number];

/** Every event of the provision state machine. */
export const PROVISION_EVENTS = [...ACTION_EVENTS, ...CONDUCTOR_EVENTS] as const;
/** An event of the provision state machine. */
export type ProvisionEvent = (typeof PROVISION_EVENTS)[number];

/** The event each API action fires (Ironic's `VERBS`). */
export const ACTION_EVENT: Readonly<Record<ProvisionAction, ActionEvent>> = {
  manage: 'manage',
  provide: 'provide',
  inspect: 'inspect',
  clean: 'clean',
  active: 'deploy',
  deploy: 'deploy',
  rebuild: 'rebuild',
  deleted: 'delete',
  undeploy: 'delete',
  abort: 'abort',
  adopt: 'adopt',
  rescue: 'rescue',
  unrescue: 'unrescue',
};

/** The canonical action name for each API event, used when listing what a state allows. */
export const EVENT_ACTION: Readonly<Record<ActionEvent, CanonicalAction>> = {
  manage: 'manage',
  provide: 'provide',
  inspect: 'inspect',
  clean: 'clean',
  deploy: 'deploy',
  rebuild: 'rebuild',
  delete: 'undeploy',
  abort: 'abort',
  adopt: 'adopt',
  rescue: 'rescue',
  unrescue: 'unrescue',
};

/**
 * The first API microversion that accepts each action; older requests get 406, as from Ironic.
 * (`abort` of `inspect wait` needs 1.41 on top: see `actionMinVersion`.)
 */
export const ACTION_MIN_VERSION: Readonly<Record<ProvisionAction, ApiVersion>> = {
  active: [1, 1],
  rebuild: [1, 1],
  deleted: [1, 1],
  manage: [1, 4],
  provide: [1, 4],
  inspect: [1, 6],
  abort: [1, 13],
  clean: [1, 15],
  adopt: [1, 17],
  rescue: [1, 38],
  unrescue: [1, 38],
  deploy: [1, 73],
  undeploy: [1, 73],
};

/** Power states a node reports in `power_state` (null while unknown). */
export const POWER_STATES = ['power on', 'power off'] as const;
/** A power state a node can be in. */
export type PowerState = (typeof POWER_STATES)[number];

/**
 * The `target` strings `PUT /v1/nodes/{node}/states/power` accepts; the soft ones need API 1.27.
 * While one runs, `target_power_state` names it.
 */
export const POWER_ACTIONS = ['power on', 'power off', 'rebooting', 'soft rebooting', 'soft power off'] as const;
/** A power action as the API accepts it. */
export type PowerAction = (typeof POWER_ACTIONS)[number];

/** True when `value` is a provision state name (for validating API filters and stored rows). */
export function isProvisionState(value: unknown): value is ProvisionState {
  return typeof value === 'string' && (PROVISION_STATES as readonly string[]).includes(value);
}

/** True when `value` is a provision action the API accepts. */
export function isProvisionAction(value: unknown): value is ProvisionAction {
  return typeof value === 'string' && (PROVISION_ACTIONS as readonly string[]).includes(value);
}

/** True when `value` is a power action the API accepts. */
export function isPowerAction(value: unknown): value is PowerAction {
  return typeof value === 'string' && (POWER_ACTIONS as readonly string[]).includes(value);
}
