/**
 * Attack (availability, HIGH, src/schema-steps.ts's count of steps in an `$async` check): an `await` Ajv writes
 * counts as the one statement it is, ~1 step, and a rejected one (the awaited check failed: Ajv's ValidationError
 * made, its promise rejected, caught and rethrown as a new one by each `$async` caller) as the ~9 statements of the
 * caller's start and catch. V8 does far more: a passing `$async` call and its await ~160 ns (`node`, 2^20 calls), a
 * rejected one ~8–20 µs (an Error's stack captured, async frames too; ~2.4 µs with `--stack-trace-limit=0`). A step
 * is ~0.3–2 ns (SCHEMA_STEPS_MAX's comment), so a check of rejected awaits runs ~1.5 µs a step: under the bound, a
 * check of a 2 KB `$async` schema over `{"x": {}}` can hold the event loop for minutes (its awaits are microtasks:
 * no I/O, no timer runs meanwhile).
 *
 * Figures (`nice npx tsx`, one check each, load 3–8 on the shared 2-core machine, main ed1c1df): a small schema, a
 * list of items each `not` an `$async` string, over 400,000 numbers (800 KB; the gateway reads bodies to 4 MB)
 * counted 21,200,014 steps and took 4.8 s of CPU (226 ns a step); 2^12 `not` leaves
 * each over a chain of 61 failing `$async` references (250,000 rejected awaits) counted 2,494,464 steps and took
 * 3.8 s of CPU (1,529 ns a step: the bound's 250M steps would be ~380 s); 2^18 leaves of one failing reference each,
 * 18,087,936 steps, 4.4 s (245 ns a step); 2^20 passing `$async` calls, 12,582,912 steps, 0.5 s (40 ns a step).
 *
 * Counted, not timed: the steps a check counts for its awaits, and the refusal of a shape of ~61,000 rejected awaits
 * (~1 s of CPU on main, where it passes).
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type ValidationResult } from '../../src/schema.js';
import { stepsCounted, STOPPED_STEPS_ISSUE } from '../../src/schema-bounds.js';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { registryWith } from './fixtures/schema-tool.js';

/**
 * An `$async` schema: `$defs` d0 … dn, each an `allOf` of two `$async` references to the next (the arguments' `x` a
 * d0: dn applied at 2^n places), dn `leaf`; and `defs` beside them.
 */
function asyncChain(leaf: object, n: number, defs: Record<string, object> = {}): Record<string, unknown> {
  const chain: Record<string, object> = { ...defs, [`d${n}`]: { ...leaf, $async: true } };
  for (let i = n - 1; i >= 0; i--)
    chain[`d${i}`] = { $async: true, allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  return { $async: true, $defs: chain, type: 'object', properties: { x: { $ref: '#/$defs/d0' } } };
}

/**
 * 2^n leaves, each `not` of f0, an `$async` chain f0 … fk whose last is a string: over an object each of f0 … fk
 * fails, so each leaf's check has k + 1 awaits rejected (each with a ValidationError of its own), and the `not` passes.
 */
function rejectingChain(n: number, k: number): { schema: Record<string, unknown>; rejected: number } {
  const defs: Record<string, object> = { [`f${k}`]: { $async: true, type: 'string' } };
  for (let i = 0; i < k; i++) defs[`f${i}`] = { $async: true, allOf: [{ $ref: `#/$defs/f${i + 1}` }] };
  return { schema: asyncChain({ not: { $ref: '#/$defs/f0' } }, n, defs), rejected: 2 ** n * (k + 1) };
}

/** The steps `check` of `value` counted (the last check to run: src/schema-bounds.ts `stepsCounted`) and its result. */
async function counted(
  schema: Record<string, unknown>,
  value: Record<string, unknown>,
): Promise<{ result: ValidationResult; steps: number }> {
  const result = await compileValidator(schema)(value);
  return { result, steps: stepsCounted() };
}

describe('an $async check counts its awaits by what they cost', () => {
  it('a rejected await counts at least 4,000 steps (~8–20 µs; main: ~10)', async () => {
    const { schema, rejected } = rejectingChain(4, 20);
    const { result, steps } = await counted(schema, { x: {} });
    expect(result).toMatchObject({ ok: true });
    expect(steps).toBeGreaterThanOrEqual(rejected * 4_000);
  });

  it('a passing await counts at least 100 steps (~160 ns; main: ~6)', async () => {
    const n = 12;
    const { result, steps } = await counted(asyncChain({ type: 'object' }, n), { x: {} });
    expect(result).toMatchObject({ ok: true });
    // The root's and each d's call of its references: 2 + 4 + … + 2^n, and x's.
    expect(steps).toBeGreaterThanOrEqual((2 ** (n + 1) - 1) * 100);
  });
});

describe('a check of ~61,000 rejected awaits (~1 s of CPU on main) is stopped at the bound', () => {
  const { schema, rejected } = rejectingChain(10, 59);

  it('refused naming the bound (main: passed, ~620,000 steps)', async () => {
    expect(rejected).toBe(61_440);
    expect(await compileValidator(schema)({ x: {} })).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
  });

  it('through a registry: refused, and the tool does not run (main: ran)', async () => {
    const { registry, ran } = registryWith(schema);
    const result = await registry.invoke('pay', { x: {} });
    expect(result.status).toBe('refused');
    expect(result.decision.reason).toContain(STOPPED_STEPS_ISSUE);
    expect(ran).toEqual([]);
  });
});

describe('a list whose items each fail an $async reference is stopped at the bound', () => {
  it('100,000 numbers (200 KB) under `items: {not: {$ref: <an $async string>}}`: refused (main: passed, 5.3M steps, 1.2 s of CPU)', async () => {
    const schema = {
      $async: true,
      type: 'object',
      properties: { list: { type: 'array', items: { not: { $ref: '#/$defs/s' } } } },
      $defs: { s: { $async: true, type: 'string' } },
    };
    const list = Array.from({ length: 100_000 }, () => 0);
    expect(await compileValidator(schema)({ list })).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
  });
});

describe('an upstream’s $async output schema fails its check without running it', () => {
  it('the content is not read (main: the check ran, unawaited, after the answer was refused)', async () => {
    let reads = 0;
    const content = {
      get x() {
        reads++;
        return {};
      },
    };
    const { schema } = rejectingChain(2, 2);
    const verdict = outputSchemaValidator.getValidator(schema)(content);
    expect(verdict).toMatchObject({ valid: false, errorMessage: 'an output schema with $async: true is not checked' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads).toBe(0);
  });
});
