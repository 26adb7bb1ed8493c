/**
 * Attack (src/schema-regexp-dfa.ts, branch atk-dfa-retry): re2js' DFA gives each state it steps from a table of one
 * entry per rune class (`new Array(numClasses + 1).fill(null)`, 8 bytes each by its count), and a class is one RE2
 * instruction however many ranges it holds: a schema `pattern` of one class of 100,000 isolated code points (400 KB
 * of UTF-8; no property escape, so MAX_PROPERTY_RANGES does not count it) and `|a(?:x*[ab]){3}c` is a program of 19
 * instructions with 200,007 rune classes: each table is 1.6 MB, five fill the DFA's 8 MB, and a text that reaches a
 * new state every ~40 characters (blocks of 40 `x` then `a` or `b`) makes re2js empty and rebuild its DFA every five
 * states without ever bailing to the NFA (its rule: at least 10 characters a state). One test of 100,000 such
 * characters cost 5.8–7.4 s of CPU (3,383 tables, 563 resets; `tsx` scratch script and this test, load 8–10), every test, the DFA
 * never left to the NFA (it alone fits the ledger). MAX_WORK lets this program test 526,000 characters (~35 s), where
 * docs/security.md states ~0.2 s of RE2's slowest matching. The model writes the argument (an MCP upstream writes
 * both the pattern and its own output).
 */
import { describe, expect, it } from 'vitest';
import { linearRegExp } from '../../src/schema-regexp.js';
import { asyncCpuMs } from '../cpu.js';
import { registryWith } from './fixtures/schema-tool.js';

/** One class of `n` isolated astral code points (every other one from U+10000), then `rest`. */
const classPattern = (n: number, rest: string): string => {
  let cls = '[';
  for (let i = 0; i < n; i++) cls += String.fromCodePoint(0x10000 + 2 * i);
  return `${cls}]${rest}`;
};

let seed = 7;
const random = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;

/** Blocks of `gap` x's, then a or b, cut to `length` characters. */
const blocks = (length: number, gap: number): string => {
  let text = '';
  while (text.length < length) text += 'x'.repeat(gap) + (random() < 0.5 ? 'a' : 'b');
  return text.slice(0, length);
};

describe("a class of many ranges: a table of that many entries for each of the DFA's states", () => {
  it('one 100,000-character argument costs about what MAX_WORK states, not seconds', async () => {
    const pattern = classPattern(100_000, '|a(?:x*[ab]){3}c');
    const { registry, ran } = registryWith({ type: 'object', properties: { s: { type: 'string', pattern } } });
    const text = blocks(100_000, 40); // no c, no class member: the pattern does not match
    expect(new RegExp(pattern, 'u').test(text)).toBe(false);
    const ms: number[] = [];
    for (let call = 0; call < 2; call++)
      ms.push(
        await asyncCpuMs(async () => {
          expect((await registry.invoke('pay', { s: text })).status).toBe('refused');
        }),
      );
    expect(ran).toEqual([]);
    // 0ca0bf2: 5,769 and 5,795 ms (vitest, load 9.5).
    expect(Math.max(...ms), `calls: ${ms.map((m) => Math.round(m)).join(', ')} ms of CPU`).toBeLessThan(1_500);
  }, 120_000);

  it('200 arguments of 60 characters cost about what the NFA costs, not 10 ms each', async () => {
    // Short texts pass no bound on the text: each fills re2js' 8 MB twice (five 1.6 MB tables, emptied, five more, then
    // it bails to the NFA) before the NFA answers: ~10.7 ms a test of 60 random a/b (`tsx` scratch script, load 9.5),
    // ~170 s for 1 MB of such strings in one call.
    const pattern = classPattern(100_000, '|a(?:x*[ab]){3}c');
    const { registry, ran } = registryWith({
      type: 'object',
      properties: { s: { type: 'array', items: { type: 'string', pattern } } },
    });
    const s = Array.from({ length: 200 }, () =>
      Array.from({ length: 60 }, () => (random() < 0.5 ? 'a' : 'b')).join(''),
    );
    expect(s.some((t) => new RegExp(pattern, 'u').test(t))).toBe(false);
    const ms = await asyncCpuMs(async () => {
      expect((await registry.invoke('pay', { s })).status).toBe('refused');
    });
    expect(ran).toEqual([]);
    // 0ca0bf2 and 21862cf (texts × classes bounded): 2,346 ms (vitest, load 8.2).
    expect(ms, `${Math.round(ms)} ms of CPU`).toBeLessThan(700);
  }, 120_000);

  it('a \\p{L} pattern whose DFA re2js empties itself on every few tests is left to the NFA', async () => {
    // `\d\p{L}|a[ab]{12}c`: 1,371 classes (an 11 KB table a state), 2^13 states of the counter: 90 MB, past re2js'
    // 8 MB, which it empties and rebuilds itself (never the ledger's doing: 8 MB fit its 32). 1,000 texts of 120 random
    // a/b (120 KB) cost ~1.0–1.9 s of CPU every call (`\d[a-z]|a[ab]{12}c`: 9–15 ms; the NFA ~0.1 s), 8–16 s a MB.
    const pattern = '\\d\\p{L}|a[ab]{12}c';
    const { registry, ran } = registryWith({
      type: 'object',
      properties: { s: { type: 'array', items: { type: 'string', pattern } } },
    });
    const ms: number[] = [];
    for (let call = 0; call < 3; call++) {
      const s = Array.from({ length: 1000 }, () =>
        Array.from({ length: 120 }, () => (random() < 0.5 ? 'a' : 'b')).join(''),
      );
      ms.push(
        await asyncCpuMs(async () => {
          expect((await registry.invoke('pay', { s })).status).toBe('refused'); // no digit, no c
        }),
      );
    }
    expect(ran).toEqual([]);
    // 0ca0bf2 and abfe24d: 997, 951, 1,017 ms (vitest, load 6.6).
    expect(ms[2]!, `calls: ${ms.map((m) => Math.round(m)).join(', ')} ms of CPU`).toBeLessThan(400);
  }, 120_000);

  it('answers as V8 does, short texts and long, in and out of the class (DFA kept or not)', () => {
    // 40,007 classes: the NFA for good; 1,307: the DFA, the NFA for texts past 2^27 ÷ 1,308 (~102,600) characters.
    for (const [points, longest] of [
      [20_000, 40_000],
      [650, 140_000],
    ] as const) {
      const pattern = classPattern(points, '|a(?:x*[ab]){3}c');
      const re = linearRegExp(pattern, 'u');
      const native = new RegExp(pattern, 'u');
      const alphabet = ['x', 'a', 'b', 'c', String.fromCodePoint(0x10000 + 2 * 77), String.fromCodePoint(0x10001)];
      const pick = (): string => alphabet[Math.floor(random() * alphabet.length)]!;
      for (let i = 0; i < 150; i++) {
        const length = i % 3 === 0 ? longest / 2 + Math.floor((random() * longest) / 2) : Math.floor(random() * 40);
        const text = i % 3 === 0 && i % 2 === 0 ? blocks(length, 12) + pick() : Array.from({ length }, pick).join('');
        expect([points, i, re.test(text)]).toEqual([points, i, native.test(text)]);
      }
    }
  }, 120_000);
});
