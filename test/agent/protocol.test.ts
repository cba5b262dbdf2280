/**
 * The agent protocol's shapes, checked against IPA's published command API and Ironic's lookup and
 * heartbeat rules: what each validator accepts, what it refuses (naming the field), and that
 * nothing but the known fields travels on.
 */
import { describe, expect, it } from 'vitest';
import { agentTokenHash, agentTokenMatches, isAgentTokenHash, issueAgentToken } from '../../src/agent/agent-token.js';
import {
  AGENT_COMMANDS,
  AGENT_PATHS,
  parseAgentStatus,
  parseCallbackUrl,
  parseCommandList,
  parseCommandRequest,
  parseCommandResult,
  parseHeartbeat,
  parseLookupQuery,
} from '../../src/agent/protocol.js';

/** A result as IPA serialises one (`ironic_python_agent/extensions/base.py`, BaseCommandResult.serialize). */
const IPA_RESULT = {
  id: '5d6f1a1e-1c3b-4c5e-9a57-0d0e1b2c3d4e',
  command_name: 'prepare_image',
  command_params: { image_info: { id: 'img', urls: ['http://c/img'] } },
  command_status: 'FAILED',
  command_error: { type: 'ImageChecksumError', code: 500, message: 'Error verifying image checksum', details: 'expected a, got b' },
  command_result: null,
};

describe('lookup query', () => {
  it('normalises MACs, drops duplicates and counts what is no Ethernet MAC', () => {
    expect(parseLookupQuery({ addresses: '52:54:00:AA:BB:CC,52-54-00-aa-bb-cc,5254.00aa.bbcc,a0:00:02:20:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:bb:cc' })).toEqual({
      addresses: ['52:54:00:aa:bb:cc'],
      ignored: 2,
      nodeUuid: null,
    });
    expect(parseLookupQuery({ node_uuid: 'A1B2C3D4-0000-4000-8000-000000000001' })).toEqual({ addresses: [], ignored: 0, nodeUuid: 'a1b2c3d4-0000-4000-8000-000000000001' });
  });

  it('refuses a non-string, too many or too long entries, and a lookup that names nothing', () => {
    expect(() => parseLookupQuery({ addresses: 5 })).toThrow(/^addresses: expected a comma-separated list/);
    expect(() => parseLookupQuery({ addresses: Array(65).fill('52:54:00:aa:bb:cc').join(',') })).toThrow(/^addresses: at most 64/);
    expect(() => parseLookupQuery({ addresses: ['52:54:00:aa:bb:cc', 'b'.repeat(65)] })).toThrow(/^addresses: an entry is longer than 64/);
    expect(() => parseLookupQuery({ addresses: ' , ,' })).toThrow(/^addresses: at least one valid MAC/);
    expect(() => parseLookupQuery({ node_uuid: ['x'] })).toThrow(/^node_uuid: expected a UUID/);
  });
});

describe('heartbeat body', () => {
  const V: readonly [number, number] = [1, 49];

  it('keeps the known fields, defaults the absent ones to null and the URL to its canonical form', () => {
    expect(parseHeartbeat({ callback_url: 'HTTP://Agent.Example:9999/', agent_token: 't', agent_version: '9.0.0' }, V)).toEqual({
      callback_url: 'http://agent.example:9999',
      agent_version: '9.0.0',
      agent_token: 't',
      agent_verify_ca: null,
      agent_status: null,
      agent_status_message: null,
    });
  });

  it('accepts agent_status from 1.72 only with a valid value, and refuses inherited or unknown keys', () => {
    const body = { callback_url: 'http://h:1', agent_token: 't' };
    expect(parseHeartbeat({ ...body, agent_status: 'end', agent_status_message: 'ok' }, [1, 72]).agent_status).toBe('end');
    expect(() => parseHeartbeat({ ...body, agent_status: 'done' }, [1, 72])).toThrow(/^agent_status: "done" is not valid; valid states are start, end, error$/);
    expect(() => parseHeartbeat({ ...body, agent_status: 'end' }, [1, 71])).toThrow(/^agent_status: not recognised at API version 1\.71; it needs 1\.72 or later$/);
    expect(() => parseHeartbeat(JSON.parse('{"callback_url":"http://h:1","agent_token":"t","__proto__":{"x":1}}'), V)).toThrow(/^"__proto__": not a heartbeat field/);
    expect(() => parseHeartbeat({ ...body, agent_token: '' }, V)).toThrow(/^agent_token: required/);
    expect(() => parseHeartbeat({ ...body, agent_version: 'a\u0000b' }, V)).toThrow(/^agent_version: contains a NUL/);
    expect(() => parseHeartbeat(null, V)).toThrow(/^request body: expected a JSON object/);
  });

  it('checks callback URLs: http(s), a host, no credentials, query or fragment', () => {
    expect(parseCallbackUrl('https://[2001:db8::5]:9999')).toBe('https://[2001:db8::5]:9999');
    expect(() => parseCallbackUrl('file:///etc/passwd')).toThrow(/^callback_url: expected an http/);
    expect(() => parseCallbackUrl('http://:pw@h:1')).toThrow(/user name or password/);
    expect(() => parseCallbackUrl('http://h:1/#x')).toThrow(/query or fragment/);
    expect(() => parseCallbackUrl('')).toThrow(/^callback_url: required/);
  });
});

describe("IPA's command API", () => {
  it('names the paths and commands as IPA serves them', () => {
    expect(AGENT_PATHS).toMatchObject({ status: '/v1/status', commands: '/v1/commands/' });
    expect(AGENT_PATHS.command('a/b')).toBe('/v1/commands/a%2Fb');
    expect(AGENT_COMMANDS).toContain('standby.prepare_image');
    for (const name of AGENT_COMMANDS) expect(parseCommandRequest({ name, params: {} }).name).toBe(name);
  });

  it('refuses a command request without a dotted name or with params that are no object, as IPA does', () => {
    expect(() => parseCommandRequest({ name: 'prepare_image', params: {} })).toThrow(/^name: "prepare_image" is not <extension>\.<command>$/);
    expect(() => parseCommandRequest({ name: 'standby.sync', params: [] })).toThrow(/^params: expected a JSON object$/);
    expect(() => parseCommandRequest({ params: {} })).toThrow(/^name: expected a string$/);
  });

  it('reads an IPA command result and keeps only its known fields', () => {
    expect(parseCommandResult({ ...IPA_RESULT, injected: 'x' })).toEqual(IPA_RESULT);
    const running = parseCommandResult({ ...IPA_RESULT, command_status: 'RUNNING', command_error: null, command_result: undefined });
    expect(running).toMatchObject({ command_status: 'RUNNING', command_error: null, command_result: null });
    expect(parseCommandResult({ ...IPA_RESULT, command_error: 'boom' }).command_error).toEqual({ type: 'CommandExecutionError', code: 500, message: 'boom', details: '' });
  });

  it('refuses malformed results naming the field, and over-long lists', () => {
    expect(() => parseCommandResult({ ...IPA_RESULT, command_status: 'DONE' })).toThrow(/^command result\.command_status: "DONE" is not one of RUNNING, SUCCEEDED, FAILED$/);
    expect(() => parseCommandResult({ ...IPA_RESULT, id: 7 })).toThrow(/^command result\.id: expected a string$/);
    expect(() => parseCommandResult({ ...IPA_RESULT, command_result: [1] })).toThrow(/^command result\.command_result: expected a JSON object or null$/);
    expect(() => parseCommandList({ commands: [IPA_RESULT, { ...IPA_RESULT, command_params: 'x' }] })).toThrow(/^commands\[1\]\.command_params: expected a JSON object$/);
    expect(() => parseCommandList({ commands: Array(1001).fill(IPA_RESULT) })).toThrow(/more than 1000 commands/);
    expect(parseCommandList({ commands: [IPA_RESULT] })).toHaveLength(1);
  });

  it('reads the agent status', () => {
    expect(parseAgentStatus({ started_at: 1700000000.5, version: '9.0.0' })).toEqual({ started_at: 1700000000.5, version: '9.0.0' });
    expect(() => parseAgentStatus({ started_at: 'now', version: '9' })).toThrow(/started_at: expected a number/);
  });
});

describe('agent tokens', () => {
  it('issues 43-character tokens, different each time, stored as their SHA-256', () => {
    const a = issueAgentToken();
    const b = issueAgentToken();
    expect(a.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.token).not.toBe(b.token);
    expect(a.hash).toBe(agentTokenHash(a.token));
    expect(isAgentTokenHash(a.hash)).toBe(true);
  });

  it('matches only the right token, and never a node without one', () => {
    const { token, hash } = issueAgentToken();
    expect(agentTokenMatches(agentTokenHash(token), hash)).toBe(true);
    expect(agentTokenMatches(agentTokenHash(`${token}x`), hash)).toBe(false);
    expect(agentTokenMatches(agentTokenHash(token), null)).toBe(false);
    // The dummy digest a token-less node is compared against is no token's digest either.
    expect(agentTokenMatches(agentTokenHash('no token has been issued for this node'), null)).toBe(false);
    expect(agentTokenMatches('zz', 'zz')).toBe(false);
  });
});
