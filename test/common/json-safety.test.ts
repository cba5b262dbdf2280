import { describe, expect, it } from 'vitest';
import { checkJsonDocument, cloneJson, jsonDepth, stringProblem } from '../../src/common/json-safety.js';
import { maskSecrets } from '../../src/common/mask.js';
import { applyNodePatch, parsePatch } from '../../src/nodes/node-patch.js';
import type { NodeRow } from '../../src/nodes/node-store.js';

/** A value nested `levels` objects deep, built without recursion. */
function nested(levels: number, leaf: Record<string, unknown> = { password: 'p' }): Record<string, unknown> {
  let v: Record<string, unknown> = leaf;
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
}

describe('JSON safety at the edge', () => {
  it('names the path of a forbidden key, an unstorable string and a too-deep value', () => {
    const limits = { maxDepth: 4 };
    expect(() => checkJsonDocument(JSON.parse('{"a":[{"b":{"__proto__":1}}]}'), limits)).toThrow('a[0].b.__proto__: the key "__proto__" is not accepted');
    expect(() => checkJsonDocument({ a: { constructor: 1 } }, limits, 'extra')).toThrow('extra.a.constructor: the key "constructor" is not accepted');
    expect(() => checkJsonDocument({ 'x y': ['\u0000'] }, limits)).toThrow('["x y"][0]: contains a NUL character');
    expect(() => checkJsonDocument(nested(5), limits)).toThrow(/^a\.a\.a\.a: nested deeper than 4 levels/);
    expect(() => checkJsonDocument(nested(4), limits)).not.toThrow();
    expect(stringProblem('\ud83d\ude00 fine')).toBeNull();
    expect(stringProblem('\ude00')).toMatch(/lone UTF-16 surrogate/);
  });

  it('walks 100,000 levels without overflowing the stack', () => {
    const deep = nested(100_000);
    expect(() => checkJsonDocument(deep, { maxDepth: 32 })).toThrow(/nested deeper than 32/);
    expect(jsonDepth(deep)).toBe(100_000);
    expect(jsonDepth(deep, 40)).toBe(41);
    // Stored rows from before the limit may be this deep: masking them must not crash the API.
    let masked: unknown = maskSecrets(deep);
    for (let i = 1; i < 100_000; i++) masked = (masked as { a: unknown }).a;
    expect(masked).toEqual({ password: '******' });
  });

  it('masks secrets inside arrays, at any depth, in copies without a prototype', () => {
    const source = { list: [{ password: 'p1' }, [{ ipmi_password: 'p2', user: 'u' }], 'plain'], configdrive: 'H4sI', empty_password: '', secret: null };
    const masked = maskSecrets(source);
    expect(JSON.parse(JSON.stringify(masked))).toEqual({ list: [{ password: '******' }, [{ ipmi_password: '******', user: 'u' }], 'plain'], configdrive: '******', empty_password: '', secret: null });
    expect(Object.getPrototypeOf(masked)).toBeNull();
    expect(source.list[0]).toEqual({ password: 'p1' });
  });
});

describe('JSON Patch and prototypes', () => {
  const node = { driver_info: {}, properties: {}, extra: { keep: 1 }, instance_info: {} } as unknown as NodeRow;

  it('refuses prototype names as path tokens, escaped or not, and never touches Object.prototype', () => {
    for (const path of ['/extra/__proto__/x', '/extra/a/constructor', '/properties/prototype', '/extra/__proto__']) {
      expect(() => parsePatch([{ op: 'add', path, value: 1 }])).toThrow(/^patch\[0\]\.path: .* is not accepted$/);
      // The conductor applies patches it receives over RPC: the walk refuses them on its own too.
      expect(() => applyNodePatch(node, [{ op: 'add', path, value: 1 }])).toThrow(/is not accepted/);
    }
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('does not treat inherited properties as keys of a JSON field', () => {
    expect(() => applyNodePatch(node, [{ op: 'remove', path: '/extra/toString' }])).toThrow('/extra/toString: no such key to remove');
    expect(() => applyNodePatch(node, [{ op: 'replace', path: '/extra/hasOwnProperty', value: 1 }])).toThrow('no such key to replace');
    expect(JSON.parse(JSON.stringify(applyNodePatch(node, [{ op: 'add', path: '/extra/a/b', value: 1 }])))).toEqual({ extra: { keep: 1, a: { b: 1 } } });
  });
});

describe('cloneJson', () => {
  it('copies deeply into objects without a prototype, keeping even a stored "__proto__" key as data', () => {
    const source = JSON.parse('{"a":[{"b":1},[2]],"__proto__":{"x":1},"c":null}') as Record<string, unknown>;
    const copy = cloneJson(source);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(source));
    expect(Object.getPrototypeOf(copy)).toBeNull();
    expect(Object.getPrototypeOf((copy.a as unknown[])[0])).toBeNull();
    expect(Object.keys(copy)).toEqual(['a', '__proto__', 'c']);
    expect(copy.a).not.toBe(source.a);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});
