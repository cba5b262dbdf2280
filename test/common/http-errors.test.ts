/**
 * The Ironic error body both ways: what the API writes (`errorBody`) is what every client of an
 * Ironic-style API reads back (`faultOf`: the CLI, the compute tier, the API calling a conductor),
 * and anything else is shown as bounded raw text.
 */
import { describe, expect, it } from 'vitest';
import { errorBody, faultOf } from '../../src/common/http-errors.js';
import { isUuid } from '../../src/common/uuid.js';

describe('faultOf', () => {
  it('reads back the message errorBody wrote', () => {
    expect(faultOf(JSON.stringify(errorBody(409, 'node x is locked by host c1')))).toBe('node x is locked by host c1');
    expect(faultOf(JSON.stringify(errorBody(500, 'internal server error')))).toBe('internal server error');
  });

  it('shows other bodies as trimmed text of at most the given length', () => {
    expect(faultOf('  <html>bad gateway</html>\n')).toBe('<html>bad gateway</html>');
    expect(faultOf('x'.repeat(1000))).toHaveLength(300);
    expect(faultOf('x'.repeat(1000), 500)).toHaveLength(500);
    expect(faultOf('{"error_message": 42}')).toBe('{"error_message": 42}');
    expect(faultOf('{"error_message": "not json"}')).toBe('{"error_message": "not json"}');
    expect(faultOf(JSON.stringify({ error_message: JSON.stringify({ faultstring: '' }) }))).toBe('{"error_message":"{\\"faultstring\\":\\"\\"}"}');
    expect(faultOf('')).toBe('');
  });
});

describe('isUuid', () => {
  it('takes 8-4-4-4-12 hex digits in either case, nothing else', () => {
    expect(isUuid('1be26c0b-03f2-4d2d-ae87-c02d7f33c123')).toBe(true);
    expect(isUuid('1BE26C0B-03F2-4D2D-AE87-C02D7F33C123')).toBe(true);
    for (const bad of ['1be26c0b03f24d2dae87c02d7f33c123', '1be26c0b-03f2-4d2d-ae87-c02d7f33c12', 'x1be26c0b-03f2-4d2d-ae87-c02d7f33c123', 'node-1', 42, null]) {
      expect(isUuid(bad), String(bad)).toBe(false);
    }
  });
});
