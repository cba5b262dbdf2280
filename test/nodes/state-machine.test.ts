import { describe, expect, it } from 'vitest';
import { IronringError } from '../../src/common/errors.js';
import {
  InvalidStateTransition,
  TRANSITIONS,
  actionMinVersion,
  allowedActions,
  allowedEvents,
  applyAction,
  defaultTarget,
  finishEvent,
  initialProvisionState,
  isActionAllowed,
  isStable,
  provisionStateAtVersion,
  stateKind,
  transition,
} from '../../src/nodes/state-machine.js';
import type { ProvisionStatus } from '../../src/nodes/state-machine.js';
import {
  ACTION_EVENT,
  FAILURE_STATES,
  PROVISION_ACTIONS,
  PROVISION_EVENTS,
  PROVISION_STATES,
  STABLE_STATES,
  WAITING_STATES,
  WORKING_STATES,
} from '../../src/nodes/states.js';
import type { ProvisionAction, ProvisionEvent, ProvisionState } from '../../src/nodes/states.js';
import {
  EXPECTED_ALLOWED_ACTIONS,
  IRONIC_FAILURE,
  IRONIC_STABLE,
  IRONIC_STUCK,
  IRONIC_TRANSITIONS,
  IRONIC_UNSTABLE,
} from './ironic-table.js';

const expectedTo = new Map(IRONIC_TRANSITIONS.map(([from, event, to]) => [`${from}|${event}`, to]));
const sorted = (xs: readonly string[]) => [...xs].sort();

/** Runs `fn`, expecting it to throw an InvalidStateTransition, and returns the error. */
function refusal(fn: () => unknown): InvalidStateTransition {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidStateTransition);
    return err as InvalidStateTransition;
  }
  throw new Error('expected an InvalidStateTransition, nothing was thrown');
}

function messageFor(state: ProvisionState, requested: string): string {
  const allowed = EXPECTED_ALLOWED_ACTIONS[state];
  return `the requested action "${requested}" cannot be performed on node in state "${state}"; allowed actions: ${allowed.length ? allowed.join(', ') : 'none'}`;
}

describe('provision state machine: the table', () => {
  it('has exactly the transitions of Ironic, no more, no fewer', () => {
    const ours = TRANSITIONS.map((r) => `${r.from} --${r.event}--> ${r.to} [${r.by}]`);
    const ironic = IRONIC_TRANSITIONS.map(([from, event, to, by]) => `${from} --${event}--> ${to} [${by}]`);
    expect(sorted(ours)).toEqual(sorted(ironic));
    expect(TRANSITIONS).toHaveLength(64);
  });

  it.each(IRONIC_TRANSITIONS.map((row) => ({ row, name: `${row[0]} --${row[1]}--> ${row[2]}` })))(
    'allows $name',
    ({ row: [from, event, to, , target] }) => {
      expect(transition(from, event)).toEqual({ state: to, target });
      expect(transition({ state: from, target: defaultTarget(from) }, event)).toEqual({ state: to, target });
    },
  );

  const missing = PROVISION_STATES.flatMap((state) =>
    PROVISION_EVENTS.filter((event) => !expectedTo.has(`${state}|${event}`)).map((event) => ({ state, event })),
  );
  it.each(missing)('refuses $event from $state', ({ state, event }) => {
    const err = refusal(() => transition(state, event));
    expect(err.message).toBe(messageFor(state, event));
  });

  it('lists the events of each state as the table has them', () => {
    for (const state of PROVISION_STATES) {
      const events = IRONIC_TRANSITIONS.filter(([from]) => from === state).map(([, event]) => event);
      expect(sorted(allowedEvents(state))).toEqual(sorted(events));
    }
  });
});

describe('provision state machine: API actions', () => {
  const cases = PROVISION_STATES.flatMap((state) => PROVISION_ACTIONS.map((action) => ({ state, action })));
  const apiRow = (state: ProvisionState, action: ProvisionAction) =>
    IRONIC_TRANSITIONS.find(([from, event, , by]) => from === state && event === ACTION_EVENT[action] && by === 'api');

  it.each(cases.filter(({ state, action }) => apiRow(state, action)))('accepts $action from $state', ({ state, action }) => {
    const [, event, to, , target] = apiRow(state, action)!;
    expect(applyAction(state, action)).toEqual({ state: to, target, event });
    expect(isActionAllowed(state, action)).toBe(true);
  });

  it.each(cases.filter(({ state, action }) => !apiRow(state, action)))('refuses $action from $state', ({ state, action }) => {
    const err = refusal(() => applyAction(state, action));
    expect(err.message).toBe(messageFor(state, action));
    expect(err.state).toBe(state);
    expect(err.requested).toBe(action);
    expect(err.allowedActions).toEqual(EXPECTED_ALLOWED_ACTIONS[state]);
    expect(isActionAllowed(state, action)).toBe(false);
  });

  it.each(PROVISION_STATES.map((state) => ({ state })))('lists the allowed actions of $state', ({ state }) => {
    expect(allowedActions(state)).toEqual(EXPECTED_ALLOWED_ACTIONS[state]);
  });

  it('names the state, the action and what is allowed, as a 400', () => {
    const err = refusal(() => applyAction('enroll', 'deploy'));
    expect(err.message).toBe('the requested action "deploy" cannot be performed on node in state "enroll"; allowed actions: manage');
    expect(err).toBeInstanceOf(IronringError);
    expect(err.name).toBe('InvalidStateTransition');
    expect(err.httpStatus).toBe(400);
    expect(refusal(() => applyAction('deploying', 'deleted')).message).toMatch(/in state "deploying"; allowed actions: none$/);
  });

  it('keeps the conductor-only transitions away from operators', () => {
    expect(transition('cleaning', 'manage')).toEqual({ state: 'manageable', target: null });
    expect(refusal(() => applyAction('cleaning', 'manage')).message).toMatch(/allowed actions: none$/);
    expect(transition('deleting', 'clean')).toEqual({ state: 'cleaning', target: 'available' });
    expect(refusal(() => applyAction('deleting', 'clean')).message).toMatch(/allowed actions: none$/);
  });

  it('accepts every spelling of deploy and undeploy', () => {
    for (const action of ['active', 'deploy'] as const) {
      expect(applyAction('available', action)).toEqual({ state: 'deploying', target: 'active', event: 'deploy' });
    }
    for (const action of ['deleted', 'undeploy'] as const) {
      expect(applyAction('active', action)).toEqual({ state: 'deleting', target: 'available', event: 'delete' });
    }
  });
});

describe('provision state machine: states and targets', () => {
  it('classifies states as Ironic does', () => {
    expect(sorted(PROVISION_STATES.filter(isStable))).toEqual(sorted(IRONIC_STABLE));
    expect(sorted(STABLE_STATES)).toEqual(sorted(IRONIC_STABLE));
    expect(sorted([...WORKING_STATES, ...WAITING_STATES])).toEqual(sorted(IRONIC_UNSTABLE));
    expect(sorted(WORKING_STATES)).toEqual(sorted(IRONIC_STUCK));
    expect(sorted(FAILURE_STATES)).toEqual(sorted(IRONIC_FAILURE));
    for (const state of PROVISION_STATES) {
      const kind = stateKind(state);
      expect(kind).toBe(
        IRONIC_STABLE.includes(state) ? 'stable' : IRONIC_STUCK.includes(state) ? 'working' : IRONIC_FAILURE.includes(state) ? 'failed' : 'waiting',
      );
      expect(defaultTarget(state) === null).toBe(kind === 'stable');
    }
    expect(new Set(PROVISION_STATES).size).toBe(24);
  });

  it('keeps a manual clean heading back to manageable through waits and failures', () => {
    let status: ProvisionStatus = transition('manageable', 'clean');
    expect(status).toEqual({ state: 'cleaning', target: 'manageable' });
    status = transition(status, 'wait');
    expect(status).toEqual({ state: 'clean wait', target: 'manageable' });
    status = transition(status, 'resume');
    expect(status).toEqual({ state: 'cleaning', target: 'manageable' });
    expect(finishEvent(status)).toBe('manage');
    expect(transition(status, finishEvent(status))).toEqual({ state: 'manageable', target: null });
    const aborted = transition(transition(status, 'wait'), 'abort');
    expect(aborted).toEqual({ state: 'clean failed', target: 'manageable' });
    expect(applyAction(aborted, 'manage')).toEqual({ state: 'manageable', target: null, event: 'manage' });
  });

  it('finishes automated cleaning and other work with done', () => {
    expect(finishEvent({ state: 'cleaning', target: 'available' })).toBe('done');
    expect(finishEvent({ state: 'deploying', target: 'active' })).toBe('done');
  });

  it('resets the target when a flow moves to another one', () => {
    expect(transition({ state: 'clean failed', target: 'manageable' }, 'manage')).toEqual({ state: 'manageable', target: null });
    expect(transition({ state: 'rescue failed', target: 'rescue' }, 'unrescue')).toEqual({ state: 'unrescuing', target: 'active' });
    expect(transition({ state: 'deploy failed', target: 'active' }, 'delete')).toEqual({ state: 'deleting', target: 'available' });
  });
});

describe('provision state machine: classic paths', () => {
  const walk = (start: ProvisionState, events: readonly ProvisionEvent[]) => {
    const seen: ProvisionStatus[] = [];
    let status: ProvisionStatus = { state: start, target: null };
    for (const event of events) {
      status = transition(status, event);
      seen.push(status);
    }
    return seen;
  };

  it('enrolls, provides, deploys and undeploys a node back to available', () => {
    const path = walk('enroll', ['manage', 'done', 'provide', 'done', 'deploy', 'wait', 'resume', 'done', 'delete', 'clean', 'done']);
    expect(path).toEqual([
      { state: 'verifying', target: 'manageable' },
      { state: 'manageable', target: null },
      { state: 'cleaning', target: 'available' },
      { state: 'available', target: null },
      { state: 'deploying', target: 'active' },
      { state: 'wait call-back', target: 'active' },
      { state: 'deploying', target: 'active' },
      { state: 'active', target: null },
      { state: 'deleting', target: 'available' },
      { state: 'cleaning', target: 'available' },
      { state: 'available', target: null },
    ]);
  });

  it('goes the same way through the API actions the stock client sends', () => {
    let status: ProvisionStatus = { state: initialProvisionState([1, 82]), target: null };
    status = applyAction(status, 'manage');
    status = transition(status, 'done');
    status = applyAction(status, 'provide');
    status = transition(status, 'done');
    expect(status).toEqual({ state: 'available', target: null });
    status = applyAction(status, 'active');
    status = transition(status, 'done');
    expect(status).toEqual({ state: 'active', target: null });
    status = applyAction(status, 'deleted');
    status = transition(transition(status, 'clean'), 'done');
    expect(status).toEqual({ state: 'available', target: null });
  });

  it('inspects, rescues, adopts and recovers from failures', () => {
    expect(walk('manageable', ['inspect', 'wait', 'resume', 'done']).at(-1)).toEqual({ state: 'manageable', target: null });
    expect(walk('active', ['rescue', 'wait', 'resume', 'done', 'unrescue', 'done']).at(-1)).toEqual({ state: 'active', target: null });
    expect(walk('manageable', ['adopt', 'fail', 'adopt', 'done']).at(-1)).toEqual({ state: 'active', target: null });
    expect(walk('available', ['deploy', 'fail', 'rebuild', 'done']).at(-1)).toEqual({ state: 'active', target: null });
    expect(walk('active', ['delete', 'fail', 'delete', 'clean', 'done']).at(-1)).toEqual({ state: 'available', target: null });
    expect(walk('enroll', ['manage', 'fail']).at(-1)).toEqual({ state: 'enroll', target: null });
  });
});

describe('provision state machine: microversions', () => {
  it('starts new nodes in available below 1.11 and in enroll from 1.11', () => {
    expect(initialProvisionState([1, 1])).toBe('available');
    expect(initialProvisionState([1, 10])).toBe('available');
    expect(initialProvisionState([1, 11])).toBe('enroll');
    expect(initialProvisionState([1, 82])).toBe('enroll');
    expect(initialProvisionState([2, 0])).toBe('enroll');
  });

  it('knows the first version of each action', () => {
    expect(actionMinVersion('active', 'available')).toEqual([1, 1]);
    expect(actionMinVersion('manage', 'enroll')).toEqual([1, 4]);
    expect(actionMinVersion('inspect', 'manageable')).toEqual([1, 6]);
    expect(actionMinVersion('abort', 'clean wait')).toEqual([1, 13]);
    expect(actionMinVersion('abort', 'inspect wait')).toEqual([1, 41]);
    expect(actionMinVersion('clean', 'manageable')).toEqual([1, 15]);
    expect(actionMinVersion('adopt', 'manageable')).toEqual([1, 17]);
    expect(actionMinVersion('rescue', 'active')).toEqual([1, 38]);
    expect(actionMinVersion('deploy', 'available')).toEqual([1, 73]);
    expect(actionMinVersion('undeploy', 'active')).toEqual([1, 73]);
  });

  it('shows older clients the state names of their version', () => {
    expect(provisionStateAtVersion('available', [1, 1])).toBeNull();
    expect(provisionStateAtVersion('available', [1, 2])).toBe('available');
    expect(provisionStateAtVersion('inspect wait', [1, 38])).toBe('inspecting');
    expect(provisionStateAtVersion('inspect wait', [1, 39])).toBe('inspect wait');
    expect(provisionStateAtVersion('active', [1, 1])).toBe('active');
  });
});
