/**
 * src/schema-regexp-dfa.ts: RE2's DFA caches charged to one ledger for the process, the least recently grown emptied
 * past MAX_DFA_BYTES; the answers never change.
 */
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { boundedTest, dfaBytes, MAX_DFA_BYTES, REST } from '../../src/schema-regexp-dfa.js';
import { linearRegExp } from '../../src/schema-regexp.js';

let seed = 11;
const random = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const randomAb = (length: number): string => Array.from({ length }, () => (random() < 0.5 ? 'a' : 'b')).join('');

describe('boundedTest', () => {
  it("reads re2js' DFA where re2js 2.10.0 keeps it (a newer re2js must be checked again)", () => {
    const re = RE2JS.compile('a+b');
    const test = boundedTest(re);
    expect(re.re2().lazyDFA).toBeNull();
    const before = dfaBytes();
    expect(test('aaab')).toBe(true);
    const dfa = re.re2().lazyDFA;
    expect(dfa.stateBudget - dfa.memBudget).toBeGreaterThan(0);
    expect(dfaBytes() - before).toBe(dfa.stateBudget - dfa.memBudget + 512);
    // What the bounds on rune classes and re2js' own emptying read: its getter, its classes, its emptying method.
    expect(re.re2().dfa).toBe(dfa);
    expect(dfa.numClasses).toBe(dfa.classBounds.length + 1);
    expect(typeof Object.getPrototypeOf(dfa).clearCache).toBe('function');
    expect(re.programSize()).toBeGreaterThan(0);
  });

  it('keeps what the DFAs hold together within MAX_DFA_BYTES, and answers as before', () => {
    // Each pattern's DFA grows ~4 MB on 20,000 random a/b (re2js' budget: 8 MB; redos5 kept all of it).
    const patterns = Array.from({ length: 10 }, (_, i) => `a[ab]{16}b${String.fromCharCode(0x61 + (i % 2))}${i}`);
    const tests = patterns.map((p) => linearRegExp(p, 'u'));
    let grown = 0;
    for (const [i, test] of tests.entries()) {
      const before = dfaBytes();
      const text = randomAb(20_000) + (i % 3 === 0 ? patterns[i]!.slice(-1) : '');
      expect(test.test(text)).toBe(new RegExp(patterns[i]!, 'u').test(text));
      grown += Math.max(0, dfaBytes() - before);
      expect(dfaBytes()).toBeLessThanOrEqual(MAX_DFA_BYTES);
    }
    expect(grown).toBeGreaterThan(MAX_DFA_BYTES); // the DFAs did grow past the budget: some were emptied
    // An emptied DFA is built again as needed: the same answers.
    for (const [i, test] of tests.entries())
      for (const t of ['', `a${'b'.repeat(17)}a${i}`, `xxa${'ab'.repeat(8)}bb${i}yy`, `a${'b'.repeat(16)}${i}`])
        expect([patterns[i], t, test.test(t)]).toEqual([patterns[i], t, new RegExp(patterns[i]!, 'u').test(t)]);
  });

  it('leaves a DFA emptied twice to the NFA (a thrashing cycle), which answers the same', () => {
    const patterns = Array.from({ length: 12 }, (_, i) => `a[ab]{16}b${String.fromCharCode(0x61 + (i % 2))}${i}`);
    // Unanchored, as linearRegExp compiles a pattern for RE2's whole-text test.
    const res = patterns.map((p) => RE2JS.compile(`[\\x{0}-\\x{10ffff}]*(?:${p})[\\x{0}-\\x{10ffff}]*`));
    const tests = res.map((re) => boundedTest(re));
    const texts = patterns.map(() => randomAb(20_000));
    for (let round = 0; round < 3; round++)
      for (const [i, test] of tests.entries()) {
        expect(test(texts[i]!)).toBe(new RegExp(patterns[i]!, 'u').test(texts[i]!));
        expect(dfaBytes()).toBeLessThanOrEqual(MAX_DFA_BYTES);
      }
    const failed = res.filter((re) => re.re2().lazyDFA?.failed === true).length;
    expect(failed).toBeGreaterThan(0); // ~4 MB each, 12 do not fit in 32 MB: the cycle thrashed
    for (const [i, test] of tests.entries())
      for (const t of [
        `a${'b'.repeat(16)}b${patterns[i]!.slice(-2)}`,
        `a${'ab'.repeat(8)}b${patterns[i]!.slice(-2)}`,
        'ab',
      ])
        expect([patterns[i], t, test(t)]).toEqual([patterns[i], t, new RegExp(patterns[i]!, 'u').test(t)]);
  });

  it('tries a DFA left to the NFA again after REST tests, and rests twice as long when it thrashes again', () => {
    const patterns = Array.from({ length: 12 }, (_, i) => `a[ab]{16}a${String.fromCharCode(0x61 + (i % 2))}${i}`);
    const res = patterns.map((p) => RE2JS.compile(`[\\x{0}-\\x{10ffff}]*(?:${p})[\\x{0}-\\x{10ffff}]*`));
    const tests = res.map((re) => boundedTest(re));
    const texts = patterns.map(() => randomAb(20_000));
    const thrash = (): void => {
      for (let round = 0; round < 3; round++)
        for (const [i, test] of tests.entries())
          expect(test(texts[i]!)).toBe(new RegExp(patterns[i]!, 'u').test(texts[i]!));
    };
    const failed = (): number[] => res.flatMap((re, i) => (re.re2().lazyDFA?.failed === true ? [i] : []));
    thrash();
    const left = failed();
    expect(left.length).toBeGreaterThan(0);
    const k = left[0]!;
    const hit = (i: number): string => `a${'b'.repeat(16)}a${String.fromCharCode(0x61 + (i % 2))}${i}`;
    /** Short tests of pattern `i` (answered as V8 answers) until its DFA is tried again: how many. */
    const testsUntilTried = (i: number): number => {
      let n = 0;
      for (; res[i]!.re2().lazyDFA.failed === true && n <= 4 * REST; n++)
        expect(tests[i]!(n % 2 === 0 ? hit(i) : 'ab')).toBe(n % 2 === 0);
      return n;
    };
    const first = testsUntilTried(k); // it was left to the NFA in the 2nd or 3rd round: a test or two already made
    expect(first).toBeLessThanOrEqual(REST);
    expect(first).toBeGreaterThan(REST - 4);
    expect(tests[k]!(texts[k]!)).toBe(new RegExp(patterns[k]!, 'u').test(texts[k]!));
    const dfa = res[k]!.re2().lazyDFA;
    expect(dfa.stateBudget - dfa.memBudget).toBeGreaterThan(2 ** 20); // its DFA built again on the long text
    expect(dfaBytes()).toBeLessThanOrEqual(MAX_DFA_BYTES); // and charged: others emptied for it
    // Cycles again, every DFA tried again before each: one that thrashes again rests twice as long as before.
    const times = new Map<number, number>(left.map((i) => [i, 1]));
    for (const i of left) if (i !== k) testsUntilTried(i);
    let doubled = 0;
    for (let cycle = 0; cycle < 4 && doubled === 0; cycle++) {
      thrash();
      const again = failed();
      expect(again.length).toBeGreaterThan(0);
      for (const i of again) {
        const rest = Math.min(REST * 2 ** (times.get(i) ?? 0), REST * 64);
        const n = testsUntilTried(i); // left in one of the cycle's 3 rounds: up to 3 tests already made
        expect([i, n <= rest && n > rest - 4, n]).toEqual([i, true, n]);
        if (times.has(i)) doubled++;
        times.set(i, (times.get(i) ?? 0) + 1);
      }
    }
    expect(doubled).toBeGreaterThan(0);
    expect(dfaBytes()).toBeLessThanOrEqual(MAX_DFA_BYTES);
  }, 120_000);

  it('charges nothing for a short text against a pattern already used (no state built)', () => {
    const test = boundedTest(RE2JS.compile('[\\x{0}-\\x{10ffff}]*(?:a[bc]+d)[\\x{0}-\\x{10ffff}]*'));
    expect(test('xxabcbd')).toBe(true);
    const held = dfaBytes();
    for (let i = 0; i < 1000; i++) expect(test('xxabcbd')).toBe(true);
    expect(dfaBytes()).toBe(held);
  });
});
