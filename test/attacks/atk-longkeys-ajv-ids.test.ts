/**
 * atk-longkeys: Ajv's `getSchemaRefs` keys each `$id` / `$anchor` it meets by its URI resolved against the base
 * around it (a Set `schemaRefs`, the object `this.refs` or `localRefs`). Under a root `$id` of 16,400 characters every
 * nested `$id: "a000123"` (or `#a000123`, or a 2020-12 `$anchor`) resolves to a URI past 16,383 characters, all of
 * one length: V8 hashes them by their length alone and each is compared with all the others. The long string is
 * written once; pointerWork (src/schema-pointers.ts) counts JSON Pointers only, so nothing bounds it.
 * Measured (`nice npx tsx tmp/ids.mts K P MODE`, scratch): K = 16,400, P = 1,200 (46 KB): 7.0 s of CPU to compile
 * (8.9 s on main); P = 2,400 (78 KB): 47.3 s; K = 16,000, P = 2,400: 1.7 s. `$anchor` (P = 1,200, 51 KB) 7.9 s,
 * `#a…` ids 8.6 s.
 * `$ref`s under such a base are as bad, and not only by hashing: Ajv resolves each reference against the base with
 * fast-uri (a regular expression per character) and keys `root.refs` by the long result (`tmp/refs.mts K P`: 1,000
 * `$ref: "#/definitions/dN"` under K = 16,400, 82 KB: 7.4 s; K = 16,000: 4.5 s; K = 100: 0.8 s; K = 64,000, 130 KB:
 * 38.2 s). Main the same (no bound on an `$id`'s length there either).
 * Nor is hashing all of it: nested `$id`s of distinct lengths (no two keys of one length) under a base of K characters
 * still cost K × P in fast-uri (`tmp/ids.mts K P distinct`: K = 200,000, P = 500, 334 KB: 3.6 s; K = 1,000,000,
 * P = 200, 1 MB: 14.5 s): the length of a base `$id` needs a bound of its own.
 * Counted, not timed: each long-URI key Ajv gives its Set is one the schema's author chose by the thousand, and the
 * characters Ajv hands its URI resolver.
 */
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import fastUri from 'fast-uri';
import { compileValidator } from '../../src/schema.js';

const HASHED_LENGTH_MAX = 16_383;
let add: MockInstance;
beforeEach(() => {
  add = vi.spyOn(Set.prototype, 'add');
});
afterEach(() => {
  add.mockRestore();
});
/** How many strings past 16,383 characters any Set was given since the test began. */
const longKeys = () =>
  add.mock.calls.filter(([key]) => typeof key === 'string' && key.length > HASHED_LENGTH_MAX).length;

function schemaOf(mode: 'id' | 'fragment' | 'anchor', count: number): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) {
    const name = `a${String(i).padStart(6, '0')}`;
    properties[`p${i}`] = mode === 'id' ? { $id: name } : mode === 'fragment' ? { $id: `#${name}` } : { $anchor: name };
  }
  return {
    ...(mode === 'anchor' ? { $schema: 'https://json-schema.org/draft/2020-12/schema' } : {}),
    $id: `http://e.example/${'x'.repeat(16_400)}/`,
    type: 'object',
    properties,
  };
}

describe('atk-longkeys: nested $id and $anchor under a long base', () => {
  for (const mode of ['id', 'fragment', 'anchor'] as const) {
    it(`${mode}: 200 URIs past 16,383 characters of one length are not keyed (refused, or keyed short)`, () => {
      try {
        compileValidator(schemaOf(mode, 200));
      } catch {
        // refused: fail-closed, and fine, so long as Ajv did not key them first
      }
      expect(longKeys()).toBeLessThan(16);
    });
  }
});

/** Characters of the strings handed to fast-uri's `resolve` while `run` runs (refusal is fine: fail-closed). */
function resolved(run: () => unknown): number {
  const resolve = vi.spyOn(fastUri, 'resolve');
  try {
    run();
  } catch {
    // refused
  }
  const characters = resolve.mock.calls.reduce(
    (sum, args) => sum + args.reduce((n: number, arg) => n + (typeof arg === 'string' ? arg.length : 0), 0),
    0,
  );
  resolve.mockRestore();
  return characters;
}

describe('atk-longkeys: $refs under a long base', () => {
  it('50 nested $ids of distinct lengths under a 100,000-character base: not each resolved against it', () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 50; i++) properties[`p${i}`] = { $id: 'a'.repeat(i + 1) };
    const base = `http://e.example/${'x'.repeat(100_000)}/`;
    // 50 ids of ~25 characters under a short base would be a few thousand; this base makes ~10M.
    expect(resolved(() => compileValidator({ $id: base, type: 'object', properties }))).toBeLessThan(2 ** 20);
  });

  it('300 local $refs under a 16,400-character $id: not each resolved and keyed past 16,383 characters', () => {
    const definitions: Record<string, unknown> = {};
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 300; i++) {
      const name = `d${String(i).padStart(5, '0')}`;
      definitions[name] = { type: 'string' };
      properties[`p${i}`] = { $ref: `#/definitions/${name}` };
    }
    // 300 references of ~40 characters under a base of a few dozen would be ~0.1M; this base makes ~5M.
    for (const length of [16_400, 16_000]) {
      const base = `http://e.example/${'x'.repeat(length)}/`;
      expect(resolved(() => compileValidator({ $id: base, type: 'object', definitions, properties }))).toBeLessThan(
        2 ** 20,
      );
    }
  });

  it('the same 300 $refs under a short $id still compile', () => {
    const definitions: Record<string, unknown> = {};
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 300; i++) {
      definitions[`d${i}`] = { type: 'string' };
      properties[`p${i}`] = { $ref: `#/definitions/d${i}` };
    }
    const check = compileValidator({ $id: 'https://example.com/s.json', type: 'object', definitions, properties });
    expect(check({ p1: 'x' })).toEqual({ ok: true, value: { p1: 'x' } });
    expect(check({ p1: 1 })).toMatchObject({ ok: false });
  });
});

describe('atk-longkeys: a base of characters a URI percent-encodes', () => {
  it('200 nested $ids under a base of 3,000 "é" (18,000 characters once encoded): not keyed past 16,383', () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 200; i++) properties[`p${i}`] = { $id: `a${String(i).padStart(6, '0')}` };
    try {
      compileValidator({ $id: `http://e.example/${'é'.repeat(3_000)}/`, type: 'object', properties });
    } catch {
      // refused: fail-closed
    }
    expect(longKeys()).toBeLessThan(16);
  });
});
