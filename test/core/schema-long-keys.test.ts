/**
 * `enum` / `const` tables (src/schema-enum.ts) and `uniqueItems` ids (src/schema-bounds.ts) keyed by safeKey
 * (src/crypto.ts): V8 hashes a string past 16,383 characters by its length alone, so members or items of one such
 * length, differing at their end, were each compared with all the others (600 `enum` members of 16,400 characters:
 * 0.52 s to compile and 0.14 s to check 600 of them; 0.17 s and 0.03 s by digest: `npx tsx tmp/misc.mts enum 600`).
 * Counted, not timed: no Map or Set is given a string that long, and membership and uniqueness are as before.
 */
import { describe, expect, it } from 'vitest';
import { compileValidator } from '../../src/schema.js';
import { HASHED_LENGTH_MAX, watchLongestKey } from '../long-keys.js';

const long = (i: number) => `${'m'.repeat(20_000)}${String(i).padStart(3, '0')}`;
const members = Array.from({ length: 50 }, (_, i) => long(i));
const longestKey = watchLongestKey({ sets: true });
const ok = (result: unknown) => (result as { ok: boolean }).ok;

describe('long strings in enum, const and uniqueItems', () => {
  it('enum and const: long members found, one differing in its last character not; no long key stored', () => {
    const validate = compileValidator({
      type: 'object',
      properties: {
        a: { type: 'array', items: { enum: members } },
        o: { enum: members.slice(0, 5).map((m) => ({ m })) },
        c: { const: { k: [long(7)] } },
      },
    });
    expect(ok(validate({ a: members.slice().reverse(), o: { m: long(3) }, c: { k: [long(7)] } }))).toBe(true);
    expect(ok(validate({ a: [long(50)] }))).toBe(false);
    expect(ok(validate({ o: { m: long(5) } }))).toBe(false);
    expect(ok(validate({ c: { k: [long(8)] } }))).toBe(false);
    expect(longestKey()).toBeLessThanOrEqual(HASHED_LENGTH_MAX);
  });

  it('uniqueItems: long strings and objects of them told apart, a repeated one found; no long key stored', () => {
    const validate = compileValidator({
      type: 'object',
      properties: {
        s: { type: 'array', items: { type: 'string' }, uniqueItems: true },
        o: { type: 'array', uniqueItems: true },
      },
    });
    expect(ok(validate({ s: members, o: members.map((m) => ({ m })) }))).toBe(true);
    expect(ok(validate({ s: [...members, long(9)] }))).toBe(false);
    expect(ok(validate({ o: [...members.map((m) => ({ m })), { m: long(9) }] }))).toBe(false);
    expect(longestKey()).toBeLessThanOrEqual(HASHED_LENGTH_MAX);
  });
});
