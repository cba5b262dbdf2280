import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  InvalidStateTransition,
  allowedActions,
  allowedEvents,
  applyAction,
  canTransition,
  isStable,
  transition,
} from '../../src/nodes/state-machine.js';
import type { ProvisionStatus } from '../../src/nodes/state-machine.js';
import { ACTION_EVENT, EVENT_ACTION, PROVISION_ACTIONS, PROVISION_EVENTS, PROVISION_STATES, STABLE_STATES } from '../../src/nodes/states.js';
import type { ProvisionState } from '../../src/nodes/states.js';

const RUNS = { numRuns: 300 };
const state = fc.constantFrom(...PROVISION_STATES);
const event = fc.constantFrom(...PROVISION_EVENTS);
const action = fc.constantFrom(...PROVISION_ACTIONS);
/** Where nodes are born: `enroll` from API 1.11, `available` before. */
const birth = fc.constantFrom<ProvisionState>('enroll', 'available');
/** Choices of the next event, each an index into whatever the current state allows. */
const choices = fc.array(fc.nat(), { minLength: 1, maxLength: 60 });

/** Follows `picks` through the machine from `start`, each pick choosing one allowed event. */
function randomWalk(start: ProvisionState, picks: readonly number[]): ProvisionStatus[] {
  const path: ProvisionStatus[] = [{ state: start, target: null }];
  for (const pick of picks) {
    const current = path.at(-1)!;
    const events = allowedEvents(current.state);
    expect(events.length).toBeGreaterThan(0); // no dead ends: every state leads somewhere
    path.push(transition(current, events[pick % events.length]!));
  }
  return path;
}

function reachableFrom(start: ProvisionState): Set<ProvisionState> {
  const seen = new Set<ProvisionState>([start]);
  const queue = [start];
  for (let s = queue.shift(); s !== undefined; s = queue.shift()) {
    for (const e of allowedEvents(s)) {
      const next = transition(s, e).state;
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return seen;
}

describe('provision state machine properties', () => {
  it('stays within known states, with a stable target exactly when the state is intermediate', () => {
    fc.assert(
      fc.property(birth, choices, (start, picks) => {
        for (const status of randomWalk(start, picks)) {
          expect(PROVISION_STATES).toContain(status.state);
          if (isStable(status.state)) expect(status.target).toBeNull();
          else expect(STABLE_STATES).toContain(status.target);
        }
      }),
      RUNS,
    );
  });

  it('accepts an API action exactly when allowedActions lists it', () => {
    fc.assert(
      fc.property(state, action, (s, a) => {
        const listed = allowedActions(s).includes(EVENT_ACTION[ACTION_EVENT[a]]);
        let accepted = true;
        try {
          applyAction(s, a);
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidStateTransition);
          accepted = false;
        }
        expect(accepted).toBe(listed);
      }),
      RUNS,
    );
  });

  it('fires an event exactly when allowedEvents lists it, and every API action is also an event', () => {
    fc.assert(
      fc.property(state, event, (s, e) => {
        const listed = allowedEvents(s).includes(e);
        expect(canTransition(s, e)).toBe(listed);
        if (listed) expect(() => transition(s, e)).not.toThrow();
        else expect(() => transition(s, e)).toThrow(InvalidStateTransition);
      }),
      RUNS,
    );
    for (const s of PROVISION_STATES) {
      for (const a of allowedActions(s)) expect(allowedEvents(s)).toContain(ACTION_EVENT[a]);
    }
  });

  it('gives an API action and its event the same result', () => {
    fc.assert(
      fc.property(state, action, (s, a) => {
        fc.pre(allowedActions(s).includes(EVENT_ACTION[ACTION_EVENT[a]]));
        const { event: fired, ...status } = applyAction(s, a);
        expect(fired).toBe(ACTION_EVENT[a]);
        expect(status).toEqual(transition(s, fired));
      }),
      RUNS,
    );
  });

  it('reaches every state from enroll, and available again from every state', () => {
    expect([...reachableFrom('enroll')].sort()).toEqual([...PROVISION_STATES].sort());
    for (const s of PROVISION_STATES) expect(reachableFrom(s).has('available')).toBe(true);
  });

  it('never fails or finishes without a conductor: done, fail, wait and resume are never API actions', () => {
    for (const s of PROVISION_STATES) {
      for (const a of allowedActions(s)) expect(['done', 'fail', 'wait', 'resume']).not.toContain(ACTION_EVENT[a]);
    }
  });
});
