/**
 * Attack (availability, src/schema-bounds.ts): the bound of SCHEMA_ERRORS_MAX errors "held at once" is per compiled
 * function, not per check. Each function Ajv compiles (the root, every `$ref` it does not inline: a recursive
 * `$ref: '#'`, a `$defs` entry that refers on) has its own `vErrors` and `errors`; a caller keeps the errors it holds
 * while it calls the next. A schema whose every level first fails 8,192 times (an `allOf` chain of 13 pairs of refs
 * to a `required`, 920 bytes) and then recurses into `properties.a: {$ref: '#'}` holds 8,192 errors in every frame
 * of the recursion: a value nested 1,000 deep (6 KB of JSON arguments) holds 8.2 million errors before the deepest
 * frame returns and the first caller stops (~0.9 GB heap, 3–5 s of one core); 4,000 deep (24 KB) 3.4 GB and 32 s
 * (`npx tsx tmp/deep2.mts 4000 13`, scratch, load ~7); 5,500 deep (33 KB) reached the heap limit (4.3 GB) after
 * 198 s and Node aborted ("JavaScript heap out of memory"): the process ends (a tool's schema, or an upstream's
 * output schema and its answer: the gateway). The errors made are all held:
 * counting the reads of `x` (one per `required` error made) shows it without a clock.
 * Without data nesting, a chain of `$defs` (each an `allOf` of the failing chain and a ref to the next) holds
 * 8,192 per schema frame: 200 frames (14 KB schema) and the value `{}` hold 1.6 million.
 * Fails on main (eb19b7d): reads = (depth + 1) × 8,192 (827,392 for 100 levels).
 */
import { describe, expect, it } from 'vitest';
import { asyncCpuMs } from '../cpu.js';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { SCHEMA_ERRORS_MAX } from '../../src/schema-bounds.js';
import { registryWith } from './fixtures/schema-tool.js';

const K = 13; // 2^13 = 8,192 errors, under the bound, in one frame

/** `$defs` c0 … cK: each an `allOf` of two refs to the next, cK `required: ['x']` (2^K errors on an object without x). */
function failing(): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < K; i++) defs[`c${i}`] = { allOf: [{ $ref: `#/$defs/c${i + 1}` }, { $ref: `#/$defs/c${i + 1}` }] };
  defs[`c${K}`] = { required: ['x'] };
  return defs;
}

/** Fails 2^K times at each level, then recurses into `a` (the untyped `allOf` runs before `properties`). */
const RECURSIVE: JsonSchema = {
  type: 'object',
  $defs: failing(),
  allOf: [{ $ref: '#/$defs/c0' }],
  properties: { a: { $ref: '#' } },
};

/** `depth` levels of `{a: …}`, each counting its reads of `x` (one per error made). */
function counted(depth: number): { value: Record<string, unknown>; reads: () => number } {
  let reads = 0;
  const proto = {
    get x(): undefined {
      reads++;
      return undefined;
    },
  };
  let value: Record<string, unknown> = Object.create(proto) as Record<string, unknown>;
  for (let i = 0; i < depth; i++) {
    const outer = Object.create(proto) as Record<string, unknown>;
    outer['a'] = value;
    value = outer;
  }
  return { value, reads: () => reads };
}

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

// A check that holds at most SCHEMA_ERRORS_MAX errors at once makes a few bounds' worth before it stops.
const MADE_MAX = 4 * SCHEMA_ERRORS_MAX;

describe('one check holds a bounded number of errors at once, however many functions it calls', () => {
  it('a recursive $ref on a value nested 100 deep: refused after a bounded number of errors (main: 827,392)', () => {
    const { value, reads } = counted(100);
    const result = compileValidator(RECURSIVE)(value);
    expect(result).toMatchObject({ ok: false });
    expect(reads()).toBeLessThan(MADE_MAX);
  });

  it('2020-12: the same', () => {
    const { value, reads } = counted(100);
    const result = compileValidator({ $schema: 'https://json-schema.org/draft/2020-12/schema', ...RECURSIVE })(value);
    expect(result).toMatchObject({ ok: false });
    expect(reads()).toBeLessThan(MADE_MAX);
  });

  it('a chain of 150 $defs frames, each holding 8,192, on the value {} (main: 1,228,800)', () => {
    const defs = failing();
    const frames = 150;
    for (let i = 0; i < frames; i++) defs[`d${i}`] = { allOf: [{ $ref: '#/$defs/c0' }, { $ref: `#/$defs/d${i + 1}` }] };
    defs[`d${frames}`] = true;
    const { value, reads } = counted(0);
    const result = compileValidator({ $defs: defs, $ref: '#/$defs/d0' })(value);
    expect(result).toMatchObject({ ok: false });
    expect(reads()).toBeLessThan(MADE_MAX);
  });

  it("an upstream's output schema and its answer: the same bound", () => {
    const { value, reads } = counted(100);
    const checked = outputSchemaValidator.getValidator(RECURSIVE as never)(value);
    expect(checked.valid).toBe(false);
    expect(reads()).toBeLessThan(MADE_MAX);
  });

  it('the gate: 6 KB of arguments nested 1,000 deep are refused in well under a second of CPU (main: 3–5 s, ~0.9 GB)', async () => {
    const { registry, ran } = registryWith(RECURSIVE);
    const args = JSON.stringify(nested(1000));
    expect(args.length).toBeLessThan(6_100);
    let result: unknown;
    const ms = await asyncCpuMs(async () => {
      [result] = await registry.executeToolCalls([{ id: 'c1', name: 'pay', arguments: args }]);
    });
    expect(result).toMatchObject({ isError: true });
    expect(ran).toEqual([]);
    expect(ms).toBeLessThan(1_000);
  });
});
