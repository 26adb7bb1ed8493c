/**
 * A schema whose subschemas' JSON Pointers Ajv's compilation would compare with each other is refused before Ajv
 * compiles it (src/schema-pointers.ts `pointerWork`, checked in src/schema.ts before `ajv.compile`).
 *
 * Ajv's `getSchemaRefs` keys an object by each subschema's pointer; V8 hashes a string past 16,383 characters by its
 * length alone, so the pointers under a long property name, of a few lengths each, are compared with each other as
 * they are stored: a name of 100,000 characters above 600 subschemas under `not` (122 KB, little code: the bound of
 * code does not see it) took 3.9 s; `format`s under such a name behind a `$ref` the bound of code does not follow,
 * 6.7 s before the bound after compiling refused it. Counted here, not timed: Ajv's compile never called, no code written, the error names why.
 */
import { Ajv } from 'ajv';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { codeWritten } from '../../src/schema-bounds.js';

/** `count` subschemas `leaf(i)` under a property name of `length` characters. */
function under(length: number, count: number, leaf: (i: number) => unknown): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) properties[`p_${i}`] = leaf(i);
  return { type: 'object', properties: { ['x'.repeat(length)]: { type: 'object', properties } } };
}

let compile: MockInstance;
beforeEach(() => {
  compile = vi.spyOn(Ajv.prototype, 'compile');
});
afterEach(() => {
  compile.mockRestore();
});

describe('a long property name above many subschemas', () => {
  it('under `not` (little code): refused before Ajv compiles it, the error naming the pointers', () => {
    const schema = { not: under(20_000, 600, () => ({ properties: { x: { minLength: 1 } } })) };
    expect(() => compileValidator(schema)).toThrow(
      /JSON Pointers longer than 16,383 characters of equal lengths \(at least [\d,]+, under a long property name\), which Ajv's compilation compares with each other/,
    );
    expect(compile).not.toHaveBeenCalled();
    expect(codeWritten()).toBe(0);
  });

  it('of `format`s behind a `$ref` the bound of code does not follow: refused before Ajv compiles it', () => {
    // An `$id` holding a fragment (here in `examples`) stops codeAtLeast following `#/…` references: on main Ajv
    // compiled this (K = 100,000 over 1,000 properties: 22 s in docs/security.md) until the bound after compiling.
    const schema = {
      $ref: '#/$defs/a',
      $defs: { a: under(20_000, 600, () => ({ type: 'string', format: 'date' })) },
      examples: [{ $id: 'https://example.com/x#y' }],
    };
    expect(() => compileValidator(schema)).toThrow(/JSON Pointers longer than 16,383 characters of equal lengths/);
    expect(compile).not.toHaveBeenCalled();
  });

  it('under other long names, at top level, or nested deeper: refused the same way', () => {
    const keys: Record<string, unknown> = {};
    for (let i = 0; i < 600; i++) keys[`${'k'.repeat(16_400)}${String(i).padStart(4, '0')}`] = {};
    const schemas: JsonSchema[] = [
      { not: { properties: keys } },
      { if: { items: { not: under(50_000, 300, () => ({})) } }, then: {} },
      { $defs: { a: under(30_000, 400, () => ({})) } },
      { allOf: [{ additionalProperties: under(20_000, 600, () => ({})) }] },
    ];
    for (const schema of schemas) {
      expect(() => compileValidator(schema)).toThrow(/JSON Pointers longer than 16,383 characters/);
      expect(compile).not.toHaveBeenCalled();
    }
  });

  it('of distinct lengths, their pointers too long in all (~84M characters): refused before Ajv compiles it', () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 2_000; i++) properties['p'.repeat(i + 1)] = {};
    const schema = { not: { properties: { ['x'.repeat(40_000)]: { properties } } } };
    expect(() => compileValidator(schema)).toThrow(/JSON Pointers of more than 67,108,864 characters in all/);
    expect(compile).not.toHaveBeenCalled();
  });

  it('a long property name above a few subschemas, or many short ones, still compile', () => {
    // Not past 16,383 characters: a key that long is refused wherever it is (atk-longkeys, below).
    const few = { not: under(16_000, 20, () => ({ properties: { x: { minLength: 1 } } })) };
    const validate = compileValidator(few);
    expect(compile).toHaveBeenCalledTimes(1);
    expect((validate({ ['x'.repeat(16_000)]: { p_0: { x: '' } } }) as { ok: boolean }).ok).toBe(true);
    expect((validate({ ['x'.repeat(16_000)]: { p_0: { x: 'y' } } }) as { ok: boolean }).ok).toBe(false);
    expect(() => compileValidator({ not: under(100, 1_000, () => ({ minLength: 1 })) })).not.toThrow();
  });

  it('a key past 16,383 characters anywhere (a property name, under default or enum) is refused before Ajv compiles', () => {
    const long = 'k'.repeat(16_384);
    for (const schema of [
      { type: 'object', properties: { [long]: { type: 'string' } } },
      { type: 'object', default: { [long]: 1 } },
      { enum: [{ a: { [long]: true } }] },
    ]) {
      expect(() => compileValidator(schema as JsonSchema)).toThrow(/an object key of more than 16,383 characters/);
    }
    expect(compile).not.toHaveBeenCalled();
    expect(() => compileValidator({ type: 'object', properties: { [long.slice(1)]: {} } })).not.toThrow();
  });
});
