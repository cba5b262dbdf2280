/**
 * Ironic's provision state machine written out by hand from ironic/common/states.py (the 21.x
 * table: no hold or service states), independently of src/nodes, so that the tests can catch a
 * wrong row in the module's own table. Each row: from, event, to, who may fire it, and the
 * `target_provision_state` the node shows afterwards when it started from `from`'s default target.
 */
import type { CanonicalAction, ProvisionEvent, ProvisionState, StableState } from '../../src/nodes/states.js';

export type ExpectedRow = readonly [ProvisionState, ProvisionEvent, ProvisionState, 'api' | 'conductor', StableState | null];

export const IRONIC_TRANSITIONS: readonly ExpectedRow[] = [
  ['enroll', 'manage', 'verifying', 'api', 'manageable'],
  ['verifying', 'done', 'manageable', 'conductor', null],
  ['verifying', 'fail', 'enroll', 'conductor', null],
  ['manageable', 'inspect', 'inspecting', 'api', 'manageable'],
  ['inspecting', 'done', 'manageable', 'conductor', null],
  ['inspecting', 'fail', 'inspect failed', 'conductor', 'manageable'],
  ['inspecting', 'wait', 'inspect wait', 'conductor', 'manageable'],
  ['inspect wait', 'done', 'manageable', 'conductor', null],
  ['inspect wait', 'fail', 'inspect failed', 'conductor', 'manageable'],
  ['inspect wait', 'abort', 'inspect failed', 'api', 'manageable'],
  ['inspect wait', 'resume', 'inspecting', 'conductor', 'manageable'],
  ['inspect failed', 'manage', 'manageable', 'api', null],
  ['inspect failed', 'inspect', 'inspecting', 'api', 'manageable'],
  ['manageable', 'provide', 'cleaning', 'api', 'available'],
  ['manageable', 'clean', 'cleaning', 'api', 'manageable'],
  ['cleaning', 'done', 'available', 'conductor', null],
  ['cleaning', 'manage', 'manageable', 'conductor', null],
  ['cleaning', 'fail', 'clean failed', 'conductor', 'available'],
  ['cleaning', 'wait', 'clean wait', 'conductor', 'available'],
  ['clean wait', 'resume', 'cleaning', 'conductor', 'available'],
  ['clean wait', 'fail', 'clean failed', 'conductor', 'available'],
  ['clean wait', 'abort', 'clean failed', 'api', 'available'],
  ['clean failed', 'manage', 'manageable', 'api', null],
  ['available', 'manage', 'manageable', 'api', null],
  ['available', 'deploy', 'deploying', 'api', 'active'],
  ['deploying', 'done', 'active', 'conductor', null],
  ['deploying', 'fail', 'deploy failed', 'conductor', 'active'],
  ['deploying', 'wait', 'wait call-back', 'conductor', 'active'],
  ['wait call-back', 'resume', 'deploying', 'conductor', 'active'],
  ['wait call-back', 'fail', 'deploy failed', 'conductor', 'active'],
  ['deploy failed', 'deploy', 'deploying', 'api', 'active'],
  ['deploy failed', 'rebuild', 'deploying', 'api', 'active'],
  ['active', 'rebuild', 'deploying', 'api', 'active'],
  ['error', 'rebuild', 'deploying', 'api', 'active'],
  ['active', 'delete', 'deleting', 'api', 'available'],
  ['wait call-back', 'delete', 'deleting', 'api', 'available'],
  ['deploy failed', 'delete', 'deleting', 'api', 'available'],
  ['error', 'delete', 'deleting', 'api', 'available'],
  ['rescue', 'delete', 'deleting', 'api', 'available'],
  ['rescue wait', 'delete', 'deleting', 'api', 'available'],
  ['rescue failed', 'delete', 'deleting', 'api', 'available'],
  ['unrescue failed', 'delete', 'deleting', 'api', 'available'],
  ['deleting', 'clean', 'cleaning', 'conductor', 'available'],
  ['deleting', 'fail', 'error', 'conductor', null],
  ['active', 'rescue', 'rescuing', 'api', 'rescue'],
  ['rescue', 'rescue', 'rescuing', 'api', 'rescue'],
  ['rescue failed', 'rescue', 'rescuing', 'api', 'rescue'],
  ['unrescue failed', 'rescue', 'rescuing', 'api', 'rescue'],
  ['rescuing', 'done', 'rescue', 'conductor', null],
  ['rescuing', 'fail', 'rescue failed', 'conductor', 'rescue'],
  ['rescuing', 'wait', 'rescue wait', 'conductor', 'rescue'],
  ['rescue wait', 'resume', 'rescuing', 'conductor', 'rescue'],
  ['rescue wait', 'fail', 'rescue failed', 'conductor', 'rescue'],
  ['rescue wait', 'abort', 'rescue failed', 'api', 'rescue'],
  ['rescue', 'unrescue', 'unrescuing', 'api', 'active'],
  ['rescue failed', 'unrescue', 'unrescuing', 'api', 'active'],
  ['unrescue failed', 'unrescue', 'unrescuing', 'api', 'active'],
  ['unrescuing', 'done', 'active', 'conductor', null],
  ['unrescuing', 'fail', 'unrescue failed', 'conductor', 'active'],
  ['manageable', 'adopt', 'adopting', 'api', 'active'],
  ['adopting', 'done', 'active', 'conductor', null],
  ['adopting', 'fail', 'adopt failed', 'conductor', 'active'],
  ['adopt failed', 'adopt', 'adopting', 'api', 'active'],
  ['adopt failed', 'manage', 'manageable', 'api', null],
];

/** The API actions each state allows, canonical names, in the order the error message lists them. */
export const EXPECTED_ALLOWED_ACTIONS: Readonly<Record<ProvisionState, readonly CanonicalAction[]>> = {
  enroll: ['manage'],
  verifying: [],
  manageable: ['provide', 'inspect', 'clean', 'adopt'],
  inspecting: [],
  'inspect wait': ['abort'],
  'inspect failed': ['manage', 'inspect'],
  cleaning: [],
  'clean wait': ['abort'],
  'clean failed': ['manage'],
  available: ['manage', 'deploy'],
  deploying: [],
  'wait call-back': ['undeploy'],
  'deploy failed': ['deploy', 'rebuild', 'undeploy'],
  active: ['rebuild', 'undeploy', 'rescue'],
  deleting: [],
  error: ['rebuild', 'undeploy'],
  rescuing: [],
  'rescue wait': ['undeploy', 'abort'],
  rescue: ['undeploy', 'rescue', 'unrescue'],
  'rescue failed': ['undeploy', 'rescue', 'unrescue'],
  unrescuing: [],
  'unrescue failed': ['undeploy', 'rescue', 'unrescue'],
  adopting: [],
  'adopt failed': ['manage', 'adopt'],
};

/** Ironic's STABLE_STATES, UNSTABLE_STATES, STUCK_STATES_TREATED_AS_FAIL and FAILURE_STATES. */
export const IRONIC_STABLE: readonly ProvisionState[] = ['enroll', 'manageable', 'available', 'active', 'error', 'rescue'];
export const IRONIC_UNSTABLE: readonly ProvisionState[] = [
  'deploying', 'wait call-back', 'cleaning', 'clean wait', 'verifying', 'deleting',
  'inspecting', 'inspect wait', 'adopting', 'rescuing', 'rescue wait', 'unrescuing',
];
export const IRONIC_STUCK: readonly ProvisionState[] = [
  'deploying', 'cleaning', 'verifying', 'inspecting', 'adopting', 'rescuing', 'unrescuing', 'deleting',
];
export const IRONIC_FAILURE: readonly ProvisionState[] = [
  'deploy failed', 'clean failed', 'inspect failed', 'rescue failed', 'unrescue failed', 'adopt failed',
];
