// src/schema-regexp-size.ts: the bound of a translated pattern's RE2 program is never below what RE2 compiles (it
// refuses a pattern before RE2 spends time and memory on it, so it must not under-count), on random patterns.
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { linearRegExp } from '../../src/schema-regexp.js';
import { MAX_PROGRAM, programBound } from '../../src/schema-regexp-size.js';

afterEach(() => {
  vi.restoreAllMocks();
});

const atom = fc.constantFrom('a', 'b', '[ab]', '\\d', '.', '[^x]', '\\s', '(?:a|bc)', '(a|)', '\\w');
const quantifier = fc.constantFrom('', '', '*', '+', '?', '{2}', '{1,3}', '{0,5}', '{2,}', '*?', '{3,7}?', '{0,40}');
const term = fc.tuple(atom, quantifier).map(([a, q]) => a + q);
const pattern: fc.Arbitrary<string> = fc.letrec<{ p: string }>((tie) => ({
  p: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.array(term, { minLength: 1, maxLength: 4 }).map((t) => t.join('')),
    fc
      .tuple(tie('p'), tie('p'), quantifier, fc.constantFrom('', '^', '\\b'))
      .map(([a, b, q, anchor]) => `${anchor}(?:${a}|${b})${q}`),
  ),
})).p;

describe('programBound', () => {
  it('is at least the program RE2 compiles, for every expression a random pattern is translated to', () => {
    const compile = RE2JS.compile.bind(RE2JS);
    const seen: [bound: number, compiled: number][] = [];
    let compiles = 0;
    vi.spyOn(RE2JS, 'compile').mockImplementation((expression: string, flags?: number) => {
      const re = compile(expression, flags);
      seen.push([programBound(expression), re.programSize()]);
      compiles++;
      return re;
    });
    fc.assert(
      fc.property(pattern, (p) => {
        seen.length = 0;
        try {
          linearRegExp(p, 'u');
        } catch (error) {
          expect(String(error)).toMatch(/too large/);
        }
        for (const [bound, compiled] of seen) expect(bound).toBeGreaterThanOrEqual(compiled);
      }),
      { numRuns: 3_000 },
    );
    expect(compiles).toBeGreaterThan(1_000); // most patterns reached RE2 (not kept as ECMAScript's own)
  });

  it('refuses a pattern past MAX_PROGRAM before RE2 compiles it', () => {
    const compile = vi.spyOn(RE2JS, 'compile');
    expect(() => linearRegExp(`(?:${'[ab]?'.repeat(600)}){1000}c`, 'u')).toThrow(
      /too large: up to \d+ RE2 instructions/,
    );
    expect(compile).not.toHaveBeenCalled();
    expect(programBound(`[\\x{61}-\\x{62}]{${MAX_PROGRAM}}`)).toBeGreaterThan(MAX_PROGRAM);
  });
});
