/**
 * Attack (availability, HIGH; src/schema-steps.ts, loopbound 025b44c): the bound of steps counts the statements of
 * each block Ajv writes, and a statement is one step whatever it calls. A string keyword calls a helper that reads
 * the whole string, outside any counted block: `maxLength` / `minLength` Ajv's `ucs2length` (a `while` loop over
 * every character, ~2.5 ns each), `pattern` a RegExp's or RE2's `test` (~1.3 / ~9 ns a character), `format` its
 * validator (`uri`: two RegExps over the string), `enum` / `const` (src/schema-enum.ts) `safeKey`, which hashes a
 * string past 16,383 characters (SHA-256 of a copy in UTF-16, at each place: strings are kept by no WeakMap). A chain of `allOf` pairs of `$ref`s (atk-round-ref-chain-loops)
 * applies such a leaf at 2^k places, each reading the whole string again, one step each. `npx tsx` of this shape, 2^12
 * places over a 40,000-character string (40 KB): `maxLength` 0.42 s, `format: uri` 0.21 s, RE2's `^(a|b)*c?$` 2.0 s
 * (as a `propertyNames` pattern on a 40,000-character key, 1.5 s), `enum` of ten strings 1.56 s, `const` 1.24 s (the
 * value refused; an 80 KB copy made at each place), 65,538 steps counted each (the bound is
 * 250,000,000); 2^20 places are 256 times that (~100 s, ~50 s, ~9 min), and a 4 MB string 100 times more again.
 *
 * Counted, not timed: the characters the helpers read during the check (wrappers of `String.prototype.charCodeAt`,
 * `RegExp.prototype.test`, the RE2 test src/schema-regexp-dfa.ts makes, and the texts src/crypto.ts `safeKey` hashes), against the steps counted; and a check
 * that reads 2.7 × 10^8 characters (more than the bound at one step a character) is refused.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { compileValidator, type ValidationResult } from '../../src/schema.js';
import { refChain, syncResult } from './fixtures/schema-tool.js';
import type * as Crypto from '../../src/crypto.js';
import type * as Dfa from '../../src/schema-regexp-dfa.js';
import { SCHEMA_STEPS_MAX, stepsCounted, STOPPED_STEPS_ISSUE } from '../../src/schema-bounds.js';

const re2 = vi.hoisted(() => ({ characters: 0 }));
const hashed = vi.hoisted(() => ({ characters: 0 }));
vi.mock('../../src/crypto.js', async (importOriginal) => {
  const real = await importOriginal<typeof Crypto>();
  return {
    ...real,
    safeKey: (text: string) => {
      const key = real.safeKey(text);
      if (key !== text) hashed.characters += text.length;
      return key;
    },
  };
});
vi.mock('../../src/schema-regexp-dfa.js', async (importOriginal) => {
  const real = await importOriginal<typeof Dfa>();
  return {
    ...real,
    boundedTest: (re: Parameters<typeof real.boundedTest>[0]) => {
      const test = real.boundedTest(re);
      return (text: string) => {
        re2.characters += text.length;
        return test(text);
      };
    },
  };
});

// The originals, put back after each test.
const charCodeAt = String.prototype.charCodeAt;
const test = RegExp.prototype.test;
afterEach(() => {
  String.prototype.charCodeAt = charCodeAt;
  RegExp.prototype.test = test;
});

/** The characters `charCodeAt`, a RegExp's `test` and RE2's test read while `run` ran. */
function charactersRead(run: () => void): number {
  let characters = 0;
  re2.characters = 0;
  hashed.characters = 0;
  String.prototype.charCodeAt = function (this: string, at: number): number {
    characters++;
    return charCodeAt.call(this, at);
  };
  RegExp.prototype.test = function (this: RegExp, text: string): boolean {
    characters += String(text).length;
    return test.call(this, text);
  };
  try {
    run();
  } finally {
    String.prototype.charCodeAt = charCodeAt;
    RegExp.prototype.test = test;
  }
  return characters + re2.characters + hashed.characters;
}

const TEXT = 'a'.repeat(20_000);
const MEMBERS = Array.from({ length: 10 }, (_, i) => `m${i}`);

describe('a string keyword reads the whole string at each place: its reading is counted', () => {
  it.each([
    ['maxLength (ucs2length)', { maxLength: 1_000_000 }, TEXT],
    ['minLength (ucs2length)', { minLength: 1 }, TEXT],
    ['pattern, a RegExp as is', { pattern: '^[a-z]+$' }, TEXT],
    ['pattern, RE2', { pattern: '^(a|b)*c?$' }, TEXT],
    ['format: uri', { format: 'uri' }, `http://a/${TEXT}`],
    ['enum of ten strings (a string past 16,383 characters hashed, src/schema-enum.ts)', { enum: MEMBERS }, TEXT],
    ['const of a long string (hashed likewise)', { const: 'q'.repeat(100) }, TEXT],
    ['propertyNames: {pattern}, RE2, over one long key', { propertyNames: { pattern: '^(a|b)*c?$' } }, { [TEXT]: 1 }],
  ])('%s at 2^6 places over 20,000 characters: a step at least for each character read', (_, leaf, x) => {
    const check = compileValidator(refChain(leaf, 6));
    let result: ValidationResult | undefined;
    const characters = charactersRead(() => {
      result = syncResult(check({ x }));
    });
    expect(result).toBeDefined();
    expect(characters).toBeGreaterThanOrEqual(64 * 20_000);
    expect(stepsCounted()).toBeGreaterThanOrEqual(characters);
  });

  it('format: uri at 2^10 places over 260,000 characters (2.7 × 10^8 read, past the bound at a step each): refused', () => {
    expect(1_024 * 260_000).toBeGreaterThan(SCHEMA_STEPS_MAX);
    const check = compileValidator(refChain({ format: 'uri' }, 10));
    const result = syncResult(check({ x: `http://a/${'a'.repeat(260_000)}` }));
    expect({ ok: result.ok, issues: result.issues }).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
  });
});
