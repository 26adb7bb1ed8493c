// src/json-text.ts: parseJsonText reads JSON text as JSON.parse reads it on Node 20 and 22, on every Node. V8 12.8
// to at least 14.6 (Node 24, 26) reads an escaped key through a map transition an earlier parse of the process
// left (nodejs/node#63785): here the process is poisoned on purpose, and by the random texts themselves (keys from
// a small alphabet collide), and the keys must still be the text's. Run on Node 20 and Node 24 (CI runs 20/22/24).
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { parseJsonText } from '../../src/json-text.js';
import { trickyKey, tree, Writer, type Tree } from '../json-writer.js';

/** Whether this Node's own JSON.parse reads keys as written (V8 before 12.8: Node 20, 22). */
const NATIVE_RIGHT = Number(process.versions.node.split('.')[0]) < 24;

/** The value `t` stands for, built as JSON.parse builds it: own data properties in text order, last value wins. */
function valueOf(t: Tree): unknown {
  if (t.kind === 'leaf') return t.value;
  if (t.kind === 'array') return t.items.map(valueOf);
  const o = {};
  for (const [k, v] of t.entries)
    Object.defineProperty(o, k, { value: valueOf(v), writable: true, enumerable: true, configurable: true });
  return o;
}

/**
 * Why `got` is not `want` (null: it is): same kinds, own keys in the same order, data properties JSON.parse makes,
 * prototypes. Numbers with `Object.is` when `exact` (a tree's 0 may be written `-0`: loosely then).
 */
function differs(got: unknown, want: unknown, exact: boolean, at = '$'): string | null {
  if (typeof want !== 'object' || want === null) {
    const same = typeof want === 'number' && !exact ? got === want : Object.is(got, want);
    return same ? null : `${at}: ${String(got)} is not ${String(want)}`;
  }
  if (typeof got !== 'object' || got === null) return `${at}: not an object`;
  if (Array.isArray(want) !== Array.isArray(got)) return `${at}: array or not`;
  if (Object.getPrototypeOf(got) !== Object.getPrototypeOf(want)) return `${at}: another prototype`;
  const gotKeys = Reflect.ownKeys(got);
  const wantKeys = Reflect.ownKeys(want);
  if (JSON.stringify(gotKeys) !== JSON.stringify(wantKeys))
    return `${at}: keys ${JSON.stringify(gotKeys)} are not ${JSON.stringify(wantKeys)}`;
  for (const key of wantKeys) {
    const g = Object.getOwnPropertyDescriptor(got, key)!;
    const w = Object.getOwnPropertyDescriptor(want, key)!;
    if (g.writable !== w.writable || g.enumerable !== w.enumerable || g.configurable !== w.configurable)
      return `${at}[${String(key)}]: attributes`;
    const inner = differs(g.value, w.value, exact, `${at}[${JSON.stringify(key)}]`);
    if (inner !== null) return inner;
  }
  return null;
}

/** Whether a key of JSON `text` holds a backslash: its strings walked from the start, whole (the reference). */
function hasEscapedKey(text: string): boolean {
  const string = /"(?:[^"\\]|\\[^])*"/g;
  for (let m = string.exec(text); m !== null; m = string.exec(text))
    if (m[0].includes('\\') && /^[ \t\n\r]*:/.test(text.slice(string.lastIndex))) return true;
  return false;
}

/** Keys from a small alphabet, escaped or not by the writer: they collide, so the parses poison each other. */
const collidingKey = fc.constantFrom(
  'h',
  'a',
  '\\',
  '"',
  '\n',
  '\u0000',
  'pat\\',
  'path',
  '\\\\',
  'a\\',
  'a"',
  '__proto__',
);
const collidingObject = fc
  .array(fc.tuple(fc.oneof({ weight: 3, arbitrary: collidingKey }, { weight: 1, arbitrary: trickyKey }), tree), {
    maxLength: 6,
  })
  .map((entries): Tree => ({ kind: 'object', entries }));
const texts = fc.tuple(
  fc.oneof(collidingObject, tree),
  fc.array(fc.nat(), { minLength: 32, maxLength: 64 }),
  fc.constantFrom(0, 0.1, 0.4),
);

describe('parseJsonText', () => {
  it('reads the keys as written after a parse that poisons V8 12.8+ (nodejs/node#63785)', () => {
    JSON.parse('{"h":[],"\\\\":0}');
    const text = '{"h":1,"\\"":2}';
    // The bug itself, where it is (so this test says what it guards against).
    expect(Object.keys(JSON.parse(text) as object)[1]).toBe(NATIVE_RIGHT ? '"' : '\\');
    expect(Object.keys(parseJsonText(text) as object)).toEqual(['h', '"']);
    // `pat\u0068` is `path`; its raw text starts with `pat\`, a key an earlier parse made.
    JSON.parse('{"lines":[],"pat\\\\":0}');
    expect(parseJsonText('{"lines":[1],"pat\\u0068":"/etc/passwd"}')).toEqual({ lines: [1], path: '/etc/passwd' });
    expect(parseJsonText('[{"h":{"h":1,"\\"":[{"h":[],"\\"":0}]}}]')).toEqual([
      { h: { h: 1, '"': [{ h: [], '"': 0 }] } },
    ]);
  });

  it('reads random texts as JSON.parse reads them on Node 20 (escapes, whitespace, duplicates, __proto__, numbers)', () => {
    let misread = 0;
    let escapedKeys = 0;
    fc.assert(
      fc.property(texts, ([t, choices, rate]) => {
        const text = new Writer(choices, rate).value(t);
        const got = parseJsonText(text);
        // The tree's value (numbers loosely: the writer may write 0 as -0) on every Node, JSON.parse's exactly
        // where JSON.parse is right.
        expect(differs(got, valueOf(t), false)).toBeNull();
        if (NATIVE_RIGHT) expect(differs(got, JSON.parse(text), true)).toBeNull();
        else if (differs(JSON.parse(text), valueOf(t), false) !== null) misread++;
        // The strict reader on every text: an escaped key around it.
        const wrapped = parseJsonText(`{"\\u0061":${text}}`) as { a: unknown };
        expect(differs(wrapped.a, got, true)).toBeNull();
        if (/\\[^"]*":/.test(text)) escapedKeys++;
      }),
      { numRuns: 3000, seed: 20261206 },
    );
    expect(escapedKeys).toBeGreaterThan(300);
    // Where V8 misreads, these texts poisoned it for each other (the test has teeth on Node 24).
    if (NATIVE_RIGHT) expect(misread).toBe(0);
    else expect(misread).toBeGreaterThan(0);
  });

  it('reads strictly exactly the texts with an escaped key (a reference tokenizer says which)', () => {
    // The strict reader decodes each token with JSON.parse: more than one call is the strict path.
    const calls = vi.spyOn(JSON, 'parse');
    try {
      let strict = 0;
      fc.assert(
        fc.property(texts, ([t, choices, rate]) => {
          const text = new Writer(choices, rate).value(t);
          calls.mockClear();
          parseJsonText(text);
          const escapedKey = hasEscapedKey(text);
          if (escapedKey) strict++;
          expect([text, calls.mock.calls.length > 1]).toEqual([text, escapedKey]);
        }),
        { numRuns: 3000, seed: 20261207 },
      );
      expect(strict).toBeGreaterThan(300);
    } finally {
      calls.mockRestore();
    }
  });

  it('makes `__proto__` an own property and calls no setter of Object.prototype', () => {
    const got = parseJsonText('{"\\u005f_proto__":{"polluted":1},"__proto__":2,"x":{"__proto__":[]}}') as Record<
      string,
      unknown
    >;
    expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
    expect(Object.keys(got)).toEqual(['__proto__', 'x']);
    expect(Object.getOwnPropertyDescriptor(got, '__proto__')?.value).toBe(2);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    let called = 0;
    Object.defineProperty(Object.prototype, 'zz', { set: () => void called++, configurable: true });
    Object.defineProperty(Array.prototype, '0', { set: () => void called++, configurable: true });
    try {
      const set = parseJsonText('{"z\\u007a":1,"l":[5]}') as Record<string, unknown>;
      expect(Object.getOwnPropertyDescriptor(set, 'zz')?.value).toBe(1);
      expect(Object.getOwnPropertyDescriptor(set['l'], '0')?.value).toBe(5);
    } finally {
      delete (Object.prototype as Record<string, unknown>)['zz'];
      delete (Array.prototype as unknown as Record<string, unknown>)['0'];
    }
    expect(called).toBe(0);
  });

  it('integer keys, duplicates, lone surrogates and numbers as JSON.parse', () => {
    const text =
      '{"b":1,"\\u0032":2,"1":3,"b":4,"\\ud800":"\\udc00","\\ud83d\\ude00":-0,"n":[1e400,-1E-400,0.1e1,12345678901234567890]}';
    const got = parseJsonText(text) as Record<string, unknown>;
    expect(Object.keys(got)).toEqual(['1', '2', 'b', '\ud800', '\ud83d\ude00', 'n']);
    expect(got['b']).toBe(4);
    expect(got['\ud800']).toBe('\udc00');
    expect(Object.is(got['\ud83d\ude00'], -0)).toBe(true);
    expect(got['n']).toEqual([Infinity, -0, 1, 12345678901234567000]);
  });

  it('deep nesting: read without recursion on the strict path, as deep as JSON.parse reads', () => {
    const depth = 100_000;
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    JSON.parse(deep); // JSON.parse reads it
    let got = (parseJsonText(`{"\\u0061":${deep}}`) as { a: unknown }).a;
    let levels = 0;
    while (Array.isArray(got) && got.length > 0) {
      got = got[0];
      levels++;
    }
    expect(levels).toBe(depth - 1);
    const objects = `${'{"\\u0061":'.repeat(depth)}1${'}'.repeat(depth)}`;
    let o = parseJsonText(objects) as { a: unknown };
    for (let i = 1; i < depth; i++) o = o.a as { a: unknown };
    expect(o.a).toBe(1);
  });

  it('costs time linear in the text: one backslash in a value, then many keys (atk-json24)', () => {
    // The escaped-key search looked back from each key's end to the nearest backslash: with one early in a value
    // and 80,000 keys after it (870 kB, a fifth of an HTTP body's bound), seconds of the event loop.
    const keys = Array.from({ length: 80_000 }, (_, i) => `"k${i}":1`).join(',');
    const text = `{"v":"\\\\",${keys}}`;
    let start = performance.now();
    JSON.parse(text);
    const native = performance.now() - start;
    start = performance.now();
    expect(Object.keys(parseJsonText(text) as object)).toHaveLength(80_001);
    // Wall clock on a loaded machine: a wide margin (the quadratic search took ~20 s here, JSON.parse ~90 ms).
    expect(performance.now() - start).toBeLessThan(20 * native + 1000);
    // Keys as written after the value: an escaped one late in the text is still found.
    const late = `{"v":"\\\\",${keys},"\\u0061":2}`;
    expect(Object.keys(parseJsonText(late) as object).at(-1)).toBe('a');
  });

  it('throws what JSON.parse throws for text that is not JSON', () => {
    for (const text of [
      '',
      ' ',
      '{',
      '{"\\u0061":}',
      '{"\\q":1}',
      '[1,]',
      '{"a":1}x',
      '"\\u12"',
      '\uFEFF{}',
      "{'a':1}",
    ]) {
      let want: unknown;
      try {
        JSON.parse(text);
      } catch (error) {
        want = error;
      }
      expect(want).toBeInstanceOf(SyntaxError);
      expect(() => parseJsonText(text)).toThrow((want as Error).message);
    }
  });
});
