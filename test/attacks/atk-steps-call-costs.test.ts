/**
 * Attack (availability, HIGH; src/schema-weights.ts): a keyword whose call costs hundreds of nanoseconds before it
 * reads a character counted one step — its statement's — on main (ed1c1df). `format: 'date-time'` builds and reads
 * a Date (~1,100 ns a call), `ipv6` runs a long expression (~700), `regex` on a string that is not a pattern makes
 * and catches a SyntaxError (~10,000), a `pattern` translated to RE2 sets up its program (~200–500). Applied at
 * 65,536 places by a `$ref` chain over 2,000 short strings, main ran 16.4 s (`date-time`), 14.9 s (`ipv6`) and 62 s
 * (`regex` under `not`) of CPU before the bound, and let the RE2 pattern pass after 3–4 s with 74M steps. Each call
 * now adds its own steps (a quarter of its ns: a statement's step costs ~2 ns in an ordinary check), so each shape
 * stops at SCHEMA_STEPS_MAX within ~1 s.
 *
 * Counted, not timed: the steps one call adds, and the refusal naming the bound.
 */
import { describe, expect, it } from 'vitest';
import { compileValidator } from '../../src/schema.js';
import { SCHEMA_STEPS_MAX, stepsCounted, STOPPED_STEPS_ISSUE } from '../../src/schema-bounds.js';
import { refChain, runsWith, syncResult } from './fixtures/schema-tool.js';

/** The steps one check of `value` against `{x: leaf}` counts. */
function stepsOf(leaf: object, value: unknown): number {
  syncResult(compileValidator({ type: 'object', properties: { x: leaf } })({ x: value }));
  return stepsCounted();
}

/** What one call of `leaf` on `value` adds to a check beside the same check of a plain string. */
function callSteps(leaf: object, value: string): number {
  return stepsOf(leaf, value) - stepsOf({ type: 'string' }, value);
}

const REFUSED = { ok: false, issues: [STOPPED_STEPS_ISSUE] };

describe("a call's own cost is counted, not one statement's step", () => {
  it.each([
    ['date-time', '2026-12-07T09:00:00Z', 200],
    ['ipv6', '::1', 100],
    ['time', '09:00:00Z', 50],
    ['uri', 'https://a.b/c', 30],
  ])('format %s on %j adds at least %i steps', (format, value, least) => {
    expect(callSteps({ type: 'string', format }, value)).toBeGreaterThanOrEqual(least);
  });

  it('format regex on a string that is not a pattern adds the SyntaxError it costs; on a pattern, far less', () => {
    const refused = callSteps({ type: 'string', format: 'regex' }, '((');
    const read = callSteps({ type: 'string', format: 'regex' }, '^a+$');
    expect(refused).toBeGreaterThanOrEqual(2_000);
    expect(read).toBeLessThan(200);
  });

  it('a pattern translated to RE2 adds its program; an ECMAScript one a few steps', () => {
    expect(callSteps({ type: 'string', pattern: '^(a|b)*c$' }, 'ababc')).toBeGreaterThanOrEqual(100);
    expect(callSteps({ type: 'string', pattern: '^[a-z]+$' }, 'abc')).toBeLessThan(20);
  });
});

describe('applied at 65,536 places over 2,000 short strings: refused at the bound', () => {
  const strings = (value: string) => Array.from({ length: 2_000 }, () => value);
  it.each([
    ['format date-time', { type: 'string', format: 'date-time' }, '2026-12-07T09:00:00Z'],
    ['format ipv6', { type: 'string', format: 'ipv6' }, '::1'],
    ['format regex under not, strings that are not patterns', { not: { type: 'string', format: 'regex' } }, '(('],
    ['an RE2 pattern', { type: 'string', pattern: '^(a|b)*c$' }, 'ababababc'],
  ])('%s: refused naming the bound', (_, items, value) => {
    const check = compileValidator(refChain({ type: 'array', items }, 16));
    expect(syncResult(check({ x: strings(value) }))).toEqual(REFUSED);
    expect(stepsCounted()).toBeGreaterThan(SCHEMA_STEPS_MAX);
  });

  it('through a registry, the tool does not run', async () => {
    const schema = refChain({ type: 'array', items: { type: 'string', pattern: '^(a|b)*c$' } }, 16);
    expect(await runsWith(schema, { x: strings('ababababc') })).toBe(false);
  });
});
