/**
 * The JSON argument text path kept per who asks (src/gate/snapshot-text.ts, issue 25): a memo hit costs a
 * fraction of a read, so a memo shared by the process let one tenant (or caller) tell by timing whether another
 * had recently sent exactly a text it guessed. A text one tenant or caller sent never makes another's call a hit;
 * the bound over all partitions holds; and every partition gives JSON.parse's object frozen (key order, `-0`,
 * duplicates, `1e400`, `"__proto__"` and whitespace included), hit, miss or resting.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { freezeParsedArguments } from '../../src/gate/snapshot.js';
import { snapshotText, textMemo } from '../../src/gate/snapshot-text.js';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';

/** The path before: JSON.parse, an object or nothing, frozen in place; or what it threw. */
function before(text: string): { value: unknown } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { value: null };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { value: null };
  try {
    return { value: freezeParsedArguments(value as Record<string, unknown>) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function now(text: string, tenant?: string, caller?: string): { value: unknown } | { error: string } {
  try {
    return { value: snapshotText(text, tenant, caller) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** Equal as JSON.parse would make them: the same keys in the same order, the same values (`-0` too), frozen alike. */
function same(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (Object.isFrozen(a) !== Object.isFrozen(b)) return false;
  const ka = Reflect.ownKeys(a);
  const kb = Reflect.ownKeys(b);
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return false;
  return ka.every((k) => same((a as Record<PropertyKey, unknown>)[k], (b as Record<PropertyKey, unknown>)[k]));
}

const blank = fc.constantFrom('', '', '', ' ', '\n  ', '\t', '\r\n', '\u00a0', '\ufeff');
const key = fc.oneof(
  fc.constantFrom(
    'amount',
    'mode',
    'path',
    'a',
    '',
    '0',
    '7',
    '01',
    '__proto__',
    'constructor',
    'toString',
    'é',
    '\ud800',
  ),
  fc.string({ maxLength: 8 }),
);
const number = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom('-0', '0', '1e400', '-1e400', '1E+2', '1e-400', '0.1', '123456789012345678', '9007199254740993'),
  fc.constantFrom('01', '-', '1.', '.5', '1e', '+1', '0x10', 'NaN', '-01', '1.5e+'),
);
const value = fc.oneof(
  number.map((n) => String(n)),
  fc.string({ maxLength: 20 }).map((s) => JSON.stringify(s)),
  fc.string({ maxLength: 20 }).map((s) => `"${s}"`), // raw: control characters, quotes and backslashes unescaped
  fc.constantFrom('true', 'false', 'null', 'tru', 'nul', '"a\\nb"', '"\\u0041"', '[1,2]', '{"b":1}', '{}', '"\u2028"'),
);
/** A flat object's text, written with odd spacing, odd values and odd keys, sometimes broken. */
const flatText = fc
  .record({
    entries: fc.array(fc.tuple(key, value, blank, blank, blank), { maxLength: 18 }),
    open: blank,
    close: blank,
    tail: fc.constantFrom('', '', '', ' ', 'x', ',', '}'),
  })
  .map(
    ({ entries, open, close, tail }) =>
      `${open}{${entries.map(([k, v, b1, b2, b3]) => `${b1}${JSON.stringify(k)}${b2}:${b3}${v}`).join(',')}${close}}${tail}`,
  );

describe('the JSON argument text path, per tenant and caller', () => {
  it('reads random flat texts, in several partitions, as JSON.parse frozen in place: order, -0, duplicates, 1e400, __proto__', () => {
    const seen = new Map<unknown, string>();
    fc.assert(
      fc.property(
        fc.array(flatText, { minLength: 1, maxLength: 6 }),
        fc.constantFrom('t1', 't2', undefined),
        (texts, tenant) => {
          for (const text of [...texts, ...texts]) {
            const want = before(text);
            const got = now(text, tenant, 'u');
            if ('error' in want) {
              expect(got).toEqual(want);
              continue;
            }
            expect('value' in got).toBe(true);
            const value = (got as { value: unknown }).value;
            expect(same(value, want.value)).toBe(true);
            if (value === null) continue;
            const owner = seen.get(value);
            if (owner !== undefined) expect(owner).toBe(`${tenant}\u0000${text}`);
            seen.set(value, `${tenant}\u0000${text}`);
          }
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('reads the same while the memo rests (a slice of a longer text too)', () => {
    for (let i = 0; i < 1024 * 2 + 2; i++) snapshotText(`{"unique":${i},"u":"${Math.random()}"}`, 'rest', 'r');
    expect(textMemo('rest', 'r').resting).toBe(true);
    const completion = `{"q":"${'a'.repeat(20)}","n":-0,"m":1e400,"t":true} ${'x'.repeat(10_000)}`;
    const text = completion.slice(0, completion.indexOf('}') + 1);
    const got = snapshotText(text, 'rest', 'r');
    const want = before(text);
    expect('value' in want && same(got, want.value)).toBe(true);
    expect(snapshotText(text, 'rest', 'r')).not.toBe(got);
  });

  it("one tenant's or caller's text never makes another's call a hit; the same tenant and caller hit", () => {
    const text = '{"account":"DE89 3704 0044 0532 0130 00","amount":25}';
    const a = snapshotText(text, 'acme', 'alice');
    expect(textMemo('acme', 'alice').size).toBeGreaterThan(0);
    expect(snapshotText(text, 'acme', 'alice')).toBe(a);
    const others = [
      snapshotText(text, 'globex', 'alice'),
      snapshotText(text, 'acme', 'bob'),
      snapshotText(text, 'acme'),
      snapshotText(text, undefined, 'alice'),
      snapshotText(text),
      // Ids that would spell one key if they were simply joined.
      snapshotText(text, 'acme:', 'lice'),
      snapshotText(text, 'acm', 'e:alice'),
    ];
    for (const [i, other] of others.entries()) {
      expect(other, `partition ${i}`).not.toBe(a);
      expect(other).toEqual(a);
      for (const [j, another] of others.entries()) if (i !== j) expect(another).not.toBe(other);
    }
    // A tenant id that is not a string uses no memo at all (a new object each time).
    const odd = { id: 1 } as unknown;
    expect(snapshotText(text, odd)).not.toBe(snapshotText(text, odd));
  });

  it('through the registry: a tenant meets its own snapshot again, never another tenant’s', async () => {
    const registry = new ToolRegistry();
    const received: unknown[] = [];
    registry.register(
      defineTool({
        name: 'pay',
        parameters: { type: 'object', properties: { to: { type: 'string' } } },
        execute: (args) => (received.push(args), 'paid'),
      }),
    );
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [{ name: 'all', tools: ['pay'], result: 'allow' }] }));
    const call = { id: 'c', type: 'function' as const, function: { name: 'pay', arguments: '{"to":"carol"}' } };
    const as = (tenant: string) => ({ tenant: { id: tenant }, caller: { id: 'u' } });
    await registry.executeToolCalls([call], as('t-a'));
    await registry.executeToolCalls([call], as('t-b'));
    await registry.executeToolCalls([call], as('t-a'));
    expect(received).toHaveLength(3);
    expect(received[1]).not.toBe(received[0]);
    expect(received[2]).toBe(received[0]);
  });

  it('keeps at most 1,024 texts across all partitions and at most 64 partitions', () => {
    for (let t = 0; t < 100; t++) for (let i = 0; i < 40; i++) snapshotText(`{"n":${i},"t":${t}}`, `bound-${t}`, 'c');
    const state = textMemo('bound-99', 'c');
    expect(state.kept).toBeLessThanOrEqual(1024);
    expect(state.kept).toBeGreaterThan(0);
    expect(state.partitions).toBeLessThanOrEqual(64);
    // Partitions that come and go keep the bound, and an early partition is forgotten, not kept forever.
    snapshotText('{"mine":1}', 'early', 'c');
    for (let t = 0; t < 70; t++) {
      for (let i = 0; i < 20; i++) snapshotText(`{"n":${i},"other":${t}}`, `churn-${t}`, 'c');
      expect(textMemo('churn-0', 'c').kept).toBeLessThanOrEqual(1024);
    }
    expect(textMemo('churn-69', 'c').partitions).toBeLessThanOrEqual(64);
  });
});
