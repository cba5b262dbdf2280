/**
 * The provision state machine: one table of `state × event → state`, modelled on Ironic's (same
 * states, events and transitions, so a node moves exactly as operators expect from Ironic), plus the
 * rules around it — stable vs. intermediate states, the target each intermediate state heads for,
 * which transitions an API action may fire and which only a conductor may.
 *
 * The table also says what a node boots from its conductor in each state (`boot`), and every list
 * of "states that need boot files" elsewhere is derived from that column (`bootNeed`,
 * `CONDUCTOR_BOOT_STATES`), so a new state gets its boot decision here, once.
 *
 * Pure and synchronous: plain values in, plain values out. The API asks `isActionAllowed` before it
 * hands an action to a conductor; the conductor, holding the node's lock, applies it with
 * `applyAction` and persists what `transition` returns as the work goes on.
 */
import { IronringError } from '../common/errors.js';
import { ACTION_EVENT, ACTION_MIN_VERSION, CANONICAL_ACTIONS, EVENT_ACTION } from './states.js';
import type {
  ActionEvent,
  ApiVersion,
  BootNeed,
  CanonicalAction,
  ProvisionAction,
  ProvisionEvent,
  ProvisionState,
  StableState,
  StateKind,
} from './states.js';

/** A node's provision state with its `target_provision_state` (null in stable states). */
export interface ProvisionStatus {
  readonly state: ProvisionState;
  readonly target: StableState | null;
}

/** One row of the table. */
export interface TransitionRule {
  readonly from: ProvisionState;
  readonly event: ProvisionEvent;
  readonly to: ProvisionState;
  /** `api`: an operator's action may fire it; `conductor`: only a conductor doing the work may. */
  readonly by: 'api' | 'conductor';
  /** A target that replaces `to`'s default (manual cleaning heads back to `manageable`). */
  readonly target?: StableState;
}

/** One row of the state table: what a state is, where it heads, and what the node boots in it. */
export interface StateInfo {
  readonly kind: StateKind;
  /** For intermediate states, the stable state they head for by default; null for stable ones. */
  readonly target: StableState | null;
  /**
   * What the node boots from its conductor's files in this state. The owner keeps these files
   * (take-over rebuilds exactly this), replicas pre-cache for it, and `conductor_affinity` names
   * where they are. Failed states need nothing: the node is left as the failure found it, and the
   * operator's next action sets it up again.
   */
  readonly boot: BootNeed;
}

/** What each state is, which stable state it heads for by default, and what the node boots in it. */
export const STATE_INFO: Readonly<Record<ProvisionState, StateInfo>> = {
  enroll: { kind: 'stable', target: null, boot: 'none' },
  verifying: { kind: 'working', target: 'manageable', boot: 'none' },
  manageable: { kind: 'stable', target: null, boot: 'none' },
  inspecting: { kind: 'working', target: 'manageable', boot: 'deploy' },
  'inspect wait': { kind: 'waiting', target: 'manageable', boot: 'deploy' },
  'inspect failed': { kind: 'failed', target: 'manageable', boot: 'none' },
  cleaning: { kind: 'working', target: 'available', boot: 'deploy' },
  'clean wait': { kind: 'waiting', target: 'available', boot: 'deploy' },
  'clean failed': { kind: 'failed', target: 'available', boot: 'none' },
  available: { kind: 'stable', target: null, boot: 'none' },
  deploying: { kind: 'working', target: 'active', boot: 'deploy' },
  // The deploy ramdisk is what calls back: the node must find it, not its instance, when it boots.
  'wait call-back': { kind: 'waiting', target: 'active', boot: 'deploy' },
  'deploy failed': { kind: 'failed', target: 'active', boot: 'none' },
  active: { kind: 'stable', target: null, boot: 'instance' },
  deleting: { kind: 'working', target: 'available', boot: 'none' },
  error: { kind: 'stable', target: null, boot: 'none' },
  rescuing: { kind: 'working', target: 'rescue', boot: 'rescue' },
  'rescue wait': { kind: 'waiting', target: 'rescue', boot: 'rescue' },
  rescue: { kind: 'stable', target: null, boot: 'rescue' },
  'rescue failed': { kind: 'failed', target: 'rescue', boot: 'none' },
  // Unrescuing boots the node back into its instance; adopting takes over a node running one.
  unrescuing: { kind: 'working', target: 'active', boot: 'instance' },
  'unrescue failed': { kind: 'failed', target: 'active', boot: 'none' },
  adopting: { kind: 'working', target: 'active', boot: 'instance' },
  'adopt failed': { kind: 'failed', target: 'active', boot: 'none' },
};

/**
 * What a node in `state` boots from its conductor's files (`STATE_INFO[state].boot`); `none` for a
 * name the table does not know (a row written by a newer release), which then gets no boot files.
 */
export function bootNeed(state: string): BootNeed {
  return Object.hasOwn(STATE_INFO, state) ? STATE_INFO[state as ProvisionState].boot : 'none';
}

/**
 * States in which a node boots from its conductor's files (boot need other than `none`): the owner
 * keeps them, replicas pre-cache them, and `/metrics` counts the nodes not yet on their owner.
 */
export const CONDUCTOR_BOOT_STATES: ReadonlySet<string> = new Set(
  (Object.keys(STATE_INFO) as ProvisionState[]).filter((state) => STATE_INFO[state].boot !== 'none'),
);

/**
 * States in which the node runs an agent that looks itself up and heartbeats: the working and
 * waiting states that boot the deploy ramdisk or the rescue agent (Ironic's lookup-allowed states:
 * deploying, wait call-back, cleaning, clean wait, inspecting, inspect wait, rescuing, rescue
 * wait). Derived from the table, so a new state gets its answer from its row. A node's agent token
 * lives only while it is in one of these.
 */
export const AGENT_STATES: ReadonlySet<string> = new Set(
  (Object.keys(STATE_INFO) as ProvisionState[]).filter((state) => {
    const { kind, boot } = STATE_INFO[state];
    return (kind === 'working' || kind === 'waiting') && (boot === 'deploy' || boot === 'rescue');
  }),
);

/** True when a node in `state` runs an agent that may look up and heartbeat (`AGENT_STATES`). */
export function expectsAgent(state: string): boolean {
  return AGENT_STATES.has(state);
}

const api = (from: ProvisionState, event: ActionEvent, to: ProvisionState, target?: StableState): TransitionRule =>
  target ? { from, event, to, by: 'api', target } : { from, event, to, by: 'api' };
const conductor = (from: ProvisionState, event: ProvisionEvent, to: ProvisionState): TransitionRule => ({ from, event, to, by: 'conductor' });

/**
 * The whole machine, grouped by flow. Ironic marks no transition as API-only or conductor-only (its
 * API lets any verb through that the table has, and relies on the node's lock for the rest); here
 * `manage` out of `cleaning` (end of a manual clean) and `clean` out of `deleting` (teardown done)
 * belong to the conductor, so an operator cannot cut those flows short.
 */
export const TRANSITIONS: readonly TransitionRule[] = [
  // Enrolment: verify the BMC credentials, fall back to enroll when they do not work.
  api('enroll', 'manage', 'verifying'),
  conductor('verifying', 'done', 'manageable'),
  conductor('verifying', 'fail', 'enroll'),
  // Inspection, synchronous or waiting on the ramdisk.
  api('manageable', 'inspect', 'inspecting'),
  conductor('inspecting', 'done', 'manageable'),
  conductor('inspecting', 'fail', 'inspect failed'),
  conductor('inspecting', 'wait', 'inspect wait'),
  conductor('inspect wait', 'done', 'manageable'),
  conductor('inspect wait', 'fail', 'inspect failed'),
  api('inspect wait', 'abort', 'inspect failed'),
  conductor('inspect wait', 'resume', 'inspecting'),
  api('inspect failed', 'manage', 'manageable'),
  api('inspect failed', 'inspect', 'inspecting'),
  // Cleaning: automated on the way to available, manual from manageable and back.
  api('manageable', 'provide', 'cleaning'),
  api('manageable', 'clean', 'cleaning', 'manageable'),
  conductor('cleaning', 'done', 'available'),
  conductor('cleaning', 'manage', 'manageable'),
  conductor('cleaning', 'fail', 'clean failed'),
  conductor('cleaning', 'wait', 'clean wait'),
  conductor('clean wait', 'resume', 'cleaning'),
  conductor('clean wait', 'fail', 'clean failed'),
  api('clean wait', 'abort', 'clean failed'),
  api('clean failed', 'manage', 'manageable'),
  api('available', 'manage', 'manageable'),
  // Deployment and rebuilds.
  api('available', 'deploy', 'deploying'),
  conductor('deploying', 'done', 'active'),
  conductor('deploying', 'fail', 'deploy failed'),
  conductor('deploying', 'wait', 'wait call-back'),
  conductor('wait call-back', 'resume', 'deploying'),
  conductor('wait call-back', 'fail', 'deploy failed'),
  api('deploy failed', 'deploy', 'deploying'),
  api('deploy failed', 'rebuild', 'deploying'),
  api('active', 'rebuild', 'deploying'),
  api('error', 'rebuild', 'deploying'),
  // Teardown: deleting, then always through cleaning to available.
  api('active', 'delete', 'deleting'),
  api('wait call-back', 'delete', 'deleting'),
  api('deploy failed', 'delete', 'deleting'),
  api('error', 'delete', 'deleting'),
  api('rescue', 'delete', 'deleting'),
  api('rescue wait', 'delete', 'deleting'),
  api('rescue failed', 'delete', 'deleting'),
  api('unrescue failed', 'delete', 'deleting'),
  conductor('deleting', 'clean', 'cleaning'),
  conductor('deleting', 'fail', 'error'),
  // Rescue and back.
  api('active', 'rescue', 'rescuing'),
  api('rescue', 'rescue', 'rescuing'),
  api('rescue failed', 'rescue', 'rescuing'),
  api('unrescue failed', 'rescue', 'rescuing'),
  conductor('rescuing', 'done', 'rescue'),
  conductor('rescuing', 'fail', 'rescue failed'),
  conductor('rescuing', 'wait', 'rescue wait'),
  conductor('rescue wait', 'resume', 'rescuing'),
  conductor('rescue wait', 'fail', 'rescue failed'),
  api('rescue wait', 'abort', 'rescue failed'),
  api('rescue', 'unrescue', 'unrescuing'),
  api('rescue failed', 'unrescue', 'unrescuing'),
  api('unrescue failed', 'unrescue', 'unrescuing'),
  conductor('unrescuing', 'done', 'active'),
  conductor('unrescuing', 'fail', 'unrescue failed'),
  // Adoption of nodes deployed by other means.
  api('manageable', 'adopt', 'adopting'),
  conductor('adopting', 'done', 'active'),
  conductor('adopting', 'fail', 'adopt failed'),
  api('adopt failed', 'adopt', 'adopting'),
  api('adopt failed', 'manage', 'manageable'),
];

const RULES = new Map<ProvisionState, Map<ProvisionEvent, TransitionRule>>();
for (const rule of TRANSITIONS) {
  const byEvent = RULES.get(rule.from) ?? new Map<ProvisionEvent, TransitionRule>();
  // A second rule for the same pair would make the machine ambiguous: fail at import, not at 3 a.m.
  if (byEvent.has(rule.event)) throw new Error(`duplicate transition ${rule.from} --${rule.event}-->`);
  byEvent.set(rule.event, rule);
  RULES.set(rule.from, byEvent);
}

/**
 * Thrown when an event or API action is not allowed from a node's provision state. The message
 * names the state, what was asked and what the state allows, e.g. `the requested action "deploy"
 * cannot be performed on node in state "enroll"; allowed actions: manage`. HTTP 400, as Ironic's
 * InvalidStateRequested — the API answers 409 NodeLocked first when the node is reserved, as Ironic
 * does, since a busy node would otherwise look like a bad request.
 */
export class InvalidStateTransition extends IronringError {
  override readonly httpStatus = 400;
  /**
   * The API actions the state allows, table order: canonical names, or when the error was made for
   * a request of a given API version, the names that version accepts (see `allowedActionsAt`).
   */
  readonly allowedActions: readonly ProvisionAction[];

  constructor(
    /** The node's provision state. */
    readonly state: ProvisionState,
    /** The action or event that was asked for, as given. */
    readonly requested: string,
    /** The API version of the request, when there is one: the allowed list then speaks it. */
    version?: ApiVersion,
  ) {
    const allowed = version === undefined ? allowedActions(state) : allowedActionsAt(state, version);
    super(
      `the requested action "${requested}" cannot be performed on node in state "${state}"; ` +
        `allowed actions: ${allowed.length > 0 ? allowed.join(', ') : 'none'}`,
    );
    this.allowedActions = allowed;
  }
}

function statusOf(current: ProvisionState | ProvisionStatus): ProvisionStatus {
  return typeof current === 'string' ? { state: current, target: STATE_INFO[current].target } : current;
}

function follow(from: ProvisionStatus, rule: TransitionRule): ProvisionStatus {
  const to = rule.to;
  if (STATE_INFO[to].kind === 'stable') return { state: to, target: null };
  if (rule.target) return { state: to, target: rule.target };
  // Within one flow a node keeps the target it started with: a manual clean heads back to
  // manageable through clean wait and clean failed, as Ironic's conductor passes it along.
  const sameFlow = STATE_INFO[from.state].kind !== 'stable' && STATE_INFO[from.state].target === STATE_INFO[to].target;
  return { state: to, target: sameFlow && from.target !== null ? from.target : STATE_INFO[to].target };
}

/**
 * Fires `event` (any event: API verbs and conductor events alike) on a node in `current` and
 * returns its new status. Pass the node's status rather than the bare state to keep a target that
 * differs from the default (manual cleaning). Throws `InvalidStateTransition` when the table has
 * no such transition.
 */
export function transition(current: ProvisionState | ProvisionStatus, event: ProvisionEvent): ProvisionStatus {
  const status = statusOf(current);
  const rule = RULES.get(status.state)?.get(event);
  if (!rule) throw new InvalidStateTransition(status.state, event);
  return follow(status, rule);
}

/**
 * Applies an operator's provision action (any API spelling, `active` or `deploy` alike) and returns
 * the event to hand to the conductor with the status the node moves to. Throws
 * `InvalidStateTransition` when the action is not allowed from the node's state, including
 * transitions the table reserves for conductors.
 */
export function applyAction(
  current: ProvisionState | ProvisionStatus,
  action: ProvisionAction,
): ProvisionStatus & { readonly event: ActionEvent } {
  const status = statusOf(current);
  const event = ACTION_EVENT[action];
  const rule = RULES.get(status.state)?.get(event);
  if (!rule || rule.by !== 'api') throw new InvalidStateTransition(status.state, action);
  return { ...follow(status, rule), event };
}

/** True when the table has a transition for `event` from `state` (whoever may fire it). */
export function canTransition(state: ProvisionState, event: ProvisionEvent): boolean {
  return RULES.get(state)?.has(event) ?? false;
}

/** Every event with a transition out of `state`, in table order. */
export function allowedEvents(state: ProvisionState): ProvisionEvent[] {
  return [...(RULES.get(state)?.keys() ?? [])];
}

/** The API actions allowed from `state`, canonical names in the order of `CANONICAL_ACTIONS`. */
export function allowedActions(state: ProvisionState): CanonicalAction[] {
  const rules = RULES.get(state);
  const allowed = new Set<CanonicalAction>();
  for (const rule of rules?.values() ?? []) {
    if (rule.by === 'api') allowed.add(EVENT_ACTION[rule.event as ActionEvent]);
  }
  return CANONICAL_ACTIONS.filter((action) => allowed.has(action));
}

/**
 * The API actions allowed from `state` as a client of `version` may send them: `deploy` and
 * `undeploy` appeared in 1.73, so older clients are offered `active` and `deleted`; actions newer
 * than the version (`rescue` before 1.38 …) are left out, as the client could not send them.
 */
export function allowedActionsAt(state: ProvisionState, version: ApiVersion): ProvisionAction[] {
  const out: ProvisionAction[] = [];
  for (const action of allowedActions(state)) {
    const spelled: ProvisionAction = atLeast(version, 1, 73) ? action : action === 'deploy' ? 'active' : action === 'undeploy' ? 'deleted' : action;
    const since = actionMinVersion(spelled, state);
    if (atLeast(version, since[0], since[1])) out.push(spelled);
  }
  return out;
}

/** True when `action` (any API spelling) is allowed from `state`. */
export function isActionAllowed(state: ProvisionState, action: ProvisionAction): boolean {
  return RULES.get(state)?.get(ACTION_EVENT[action])?.by === 'api';
}

/** True for stable states: nothing happens to the node until someone asks. */
export function isStable(state: ProvisionState): state is StableState {
  return STATE_INFO[state].kind === 'stable';
}

/** The kind of `state`: stable, working, waiting or failed. */
export function stateKind(state: ProvisionState): StateKind {
  return STATE_INFO[state].kind;
}

/** The stable state an intermediate state heads for by default; null for stable states. */
export function defaultTarget(state: ProvisionState): StableState | null {
  return STATE_INFO[state].target;
}

/**
 * The event a conductor fires when the work of a working state has succeeded: `done`, except that
 * a manual clean (target `manageable`) ends with `manage`, as in Ironic's table.
 */
export function finishEvent(status: ProvisionStatus): 'done' | 'manage' {
  return status.state === 'cleaning' && status.target === 'manageable' ? 'manage' : 'done';
}

const atLeast = (version: ApiVersion, major: number, minor: number): boolean =>
  version[0] > major || (version[0] === major && version[1] >= minor);

/** The state a new node starts in: `available` for requests below API 1.11, `enroll` from 1.11. */
export function initialProvisionState(version: ApiVersion): 'enroll' | 'available' {
  return atLeast(version, 1, 11) ? 'enroll' : 'available';
}

/**
 * The first microversion that may ask for `action` on a node in `state`: the action's own minimum,
 * raised to 1.41 for aborting `inspect wait` (Ironic answers older requests 406).
 */
export function actionMinVersion(action: ProvisionAction, state: ProvisionState): ApiVersion {
  const base = ACTION_MIN_VERSION[action];
  return state === 'inspect wait' && ACTION_EVENT[action] === 'abort' && !atLeast(base, 1, 41) ? [1, 41] : base;
}

/**
 * `provision_state` as a client of `version` must see it: before 1.2 `available` was shown as
 * null, before 1.39 `inspect wait` as `inspecting` (Ironic hides newer names the same way).
 */
export function provisionStateAtVersion(state: ProvisionState, version: ApiVersion): ProvisionState | null {
  if (state === 'available' && !atLeast(version, 1, 2)) return null;
  if (state === 'inspect wait' && !atLeast(version, 1, 39)) return 'inspecting';
  return state;
}

const BOOT_NEED_TEXT: Readonly<Record<Exclude<BootNeed, 'none'>, string>> = {
  deploy: 'deploy ramdisk',
  instance: 'instance',
  rescue: 'rescue agent',
};

/**
 * The machine as Markdown for docs: one table of states (kind, default target, boot need, allowed
 * actions) and one of transitions. `docs/states.md` embeds it and a test keeps the two identical.
 */
export function renderStateMachineMarkdown(): string {
  const lines: string[] = [
    '| state | kind | default target | boots from its conductor | API actions allowed |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const [state, info] of Object.entries(STATE_INFO) as [ProvisionState, StateInfo][]) {
    const actions = allowedActions(state);
    const boot = info.boot === 'none' ? '—' : BOOT_NEED_TEXT[info.boot];
    lines.push(`| \`${state}\` | ${info.kind} | ${info.target ? `\`${info.target}\`` : '—'} | ${boot} | ${actions.length ? actions.join(', ') : '—'} |`);
  }
  lines.push('', '| from | event | to | fired by |', '| --- | --- | --- | --- |');
  for (const rule of TRANSITIONS) {
    const target = rule.target ? ` (target \`${rule.target}\`)` : '';
    lines.push(`| \`${rule.from}\` | \`${rule.event}\` | \`${rule.to}\`${target} | ${rule.by} |`);
  }
  return `${lines.join('\n')}\n`;
}
