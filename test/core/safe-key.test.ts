/**
 * src/crypto.ts `safeKey`: a Map's key for a text an outsider chooses. V8 hashes a string past 16,383 characters by
 * its length alone, so such texts of one length all fall in one bucket and each look-up compares it with all of them;
 * such a text is keyed by its digest instead, and two texts are equal exactly when their keys are.
 */
import { describe, expect, it } from 'vitest';
import { HASHED_LENGTH_MAX, safeKey } from '../../src/crypto.js';

describe('safeKey', () => {
  it('keeps a text V8 hashes by its characters as its own key', () => {
    for (const text of ['', 'search', '{"type":"object"}', 'é\u{1F600}', 'x'.repeat(HASHED_LENGTH_MAX)])
      expect(safeKey(text)).toBe(text);
  });

  it('keys a longer text by 65 characters: equal texts one key, texts differing in one unit (at the end) two', () => {
    const a = 'x'.repeat(20_000);
    const keys = [safeKey(a), safeKey(`${a}`.slice(0)), safeKey('x'.repeat(20_000))];
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]!.length).toBe(65);
    expect(keys[0]!.length).toBeLessThanOrEqual(HASHED_LENGTH_MAX);
    expect(safeKey(`${a.slice(1)}y`)).not.toBe(keys[0]);
    expect(safeKey(`${a}x`)).not.toBe(keys[0]);
    expect(safeKey('x'.repeat(HASHED_LENGTH_MAX + 1))).toHaveLength(65);
  });

  it('keeps texts that differ only in a lone surrogate apart (its UTF-16 units digested, not UTF-8)', () => {
    const pad = 'x'.repeat(HASHED_LENGTH_MAX);
    const keys = [`${pad}\uD800`, `${pad}\uDC00`, `${pad}\uFFFD`, `${pad}\uD800\uDC00`].map(safeKey);
    expect(new Set(keys).size).toBe(4);
  });

  it('digests a short text that starts with NUL too: no text is its own key when it reads as a digest', () => {
    const digest = safeKey('x'.repeat(20_000));
    expect(digest.charCodeAt(0)).toBe(0);
    expect(safeKey(digest)).not.toBe(digest);
    expect(safeKey(digest)).toHaveLength(65);
    expect(safeKey('\u0000')).not.toBe('\u0000');
  });
});
