/**
 * src/schema.ts keeps compiled validators by their schema's JSON text, so tools with equal schemas share one. It kept
 * every one for good: an upstream relisting new schemas (each kept by its whole text, a 1 MB schema a 1 MB key) grew
 * it without end. It now keeps at most COMPILED_MAX entries and COMPILED_SIZE_MAX characters of text and code, the least
 * recently used dropped first.
 */
import { describe, expect, it, vi } from 'vitest';
import { COMPILED_MAX, COMPILED_SIZE_MAX, compiledKept, compileValidator } from '../../src/schema.js';

describe('the compiled validators kept by schema text', () => {
  it('keeps at most COMPILED_MAX of them, however many distinct schemas are compiled', () => {
    for (let i = 0; i < COMPILED_MAX + 500; i++) compileValidator({ type: 'object', minProperties: i });
    expect(compiledKept().entries).toBe(COMPILED_MAX);
  });

  it('keeps at most COMPILED_SIZE_MAX characters of their text and code; one past it alone is not kept', () => {
    const big = (i: number, length: number) => ({ type: 'object', description: `${i}`.padEnd(length, '.') });
    const size = 1_000_000;
    for (let i = 0; i < 2 * (COMPILED_SIZE_MAX / size); i++) compileValidator(big(i, size));
    const kept = compiledKept();
    expect(kept.size).toBeLessThanOrEqual(COMPILED_SIZE_MAX);
    expect(kept.size).toBeGreaterThan(COMPILED_SIZE_MAX - 2 * size);
    compileValidator(big(-1, COMPILED_SIZE_MAX + 1));
    expect(compiledKept().size).toBe(kept.size);
  });

  it('equal schemas share one validator; the most recently used stays while others are dropped', () => {
    const shared = { type: 'object', required: ['kept'] };
    const first = compileValidator(shared);
    expect(compileValidator({ ...shared })).toBe(first);
    const oldest = compileValidator({ type: 'object', maxProperties: 0 });
    for (let i = 1; i < COMPILED_MAX + 1000; i++) {
      compileValidator({ type: 'object', maxProperties: i });
      if (i % 1000 === 0) expect(compileValidator({ type: 'object', required: ['kept'] })).toBe(first);
    }
    expect(compiledKept().entries).toBe(COMPILED_MAX);
    // The least recently used was dropped: compiled anew, then kept.
    const again = compileValidator({ type: 'object', maxProperties: 0 });
    expect(again).not.toBe(oldest);
    expect(compileValidator({ type: 'object', maxProperties: 0 })).toBe(again);
  });

  it('keys a text past 16,383 characters by its digest (no Map is given it), equal texts sharing one check', () => {
    // V8 hashes a longer string by its length alone: 3,000 texts of 16,400 characters differing at their end made each
    // look-up compare every kept text of that length (docs/security.md).
    const long = (i: number) => ({ type: 'object', description: `${i}`.padStart(20_000, '.') });
    const set = vi.spyOn(Map.prototype, 'set');
    let first;
    try {
      first = compileValidator(long(1));
      expect(compileValidator(long(1))).toBe(first);
      expect(compileValidator({ ...long(1) })).toBe(first);
      const keys = set.mock.calls.map(([key]) => (typeof key === 'string' ? key.length : 0));
      expect(Math.max(...keys)).toBeLessThan(16_384);
    } finally {
      set.mockRestore();
    }
    const second = compileValidator(long(2)); // the same length, another text: its own check
    expect(second).not.toBe(first);
    expect(compileValidator(long(2))).toBe(second);
    expect(compileValidator(long(1))).toBe(first);
  });
});
