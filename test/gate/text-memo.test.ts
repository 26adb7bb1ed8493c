/**
 * The memo of JSON argument text (src/gate/snapshot-text.ts `snapshotText`, issue 25): a text met again gets the
 * frozen object its first parse made. On random texts the memoised snapshot deep-equals JSON.parse of the text
 * frozen in place (the path before the memo), is deep-frozen, and is only ever another call's object when the
 * texts are equal; the gate decides and runs a call whose text hits the memo as it does the same call read
 * without it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { freezeParsedArguments } from '../../src/gate/snapshot.js';
import { snapshotText, textMemo } from '../../src/gate/snapshot-text.js';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';

/** The path before the memo: JSON.parse, an object or nothing, frozen in place. */
function parsedBefore(text: string): Readonly<Record<string, unknown>> | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  return freezeParsedArguments(value as Record<string, unknown>);
}

function deepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deepFrozen);
}

function outcome(read: () => unknown): { value: unknown } | { error: string } {
  try {
    return { value: read() };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** Texts JSON.stringify never writes: duplicate keys, numbers past a double, `"__proto__"` keys, escapes, blanks. */
const odd = fc.constantFrom(
  '{"a":1,"a":2}',
  '{"a":{"b":1,"b":[1e400,-1e400]}}',
  '{"n":123456789012345678901234567890,"m":1e-400,"z":-0}',
  '{"__proto__":{"x":1}}',
  '{"a":{"__proto__":null}}',
  '{"\\u005f_proto__":1}',
  '{"k":"\\ud800","e":"\\u0000"}',
  ' { "amount" : 1 } ',
  '[1,2]',
  '"text"',
  'null',
  '',
  '{',
  '{"a":1}x',
);
const text = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 })).map((o) => JSON.stringify(o)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  odd,
);

describe('the memo of JSON argument text', () => {
  it('on random texts: the snapshot of JSON.parse frozen in place, deep-frozen, the same object only for the same text', () => {
    const seen = new Map<unknown, string>();
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 8 }), (texts) => {
        for (const t of [...texts, ...texts]) {
          const got = outcome(() => snapshotText(t));
          expect(got).toEqual(outcome(() => parsedBefore(t)));
          if (!('value' in got) || got.value === null) continue;
          expect(deepFrozen(got.value)).toBe(true);
          // An object handed out for one text is never handed out for another.
          const owner = seen.get(got.value);
          if (owner !== undefined) expect(owner).toBe(t);
          seen.set(got.value, t);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a text met again is the object of its first parse; a text one character away is its own', () => {
    while (textMemo().resting) snapshotText('{}');
    const a = snapshotText('{"amount":7,"mode":"read"}');
    expect(snapshotText('{"amount":7,"mode":"read"}')).toBe(a);
    const b = snapshotText('{"amount":8,"mode":"read"}');
    expect(b).not.toBe(a);
    expect(b).toEqual({ amount: 8, mode: 'read' });
    expect(snapshotText('{"amount":7,"mode":"read"} ')).not.toBe(a);
    // Refused texts are never kept: a "__proto__" key throws every time.
    for (let i = 0; i < 2; i++) expect(() => snapshotText('{"__proto__":{"x":1}}')).toThrow(/__proto__/);
  });

  it('is bounded, and set aside when the texts are not met again', () => {
    for (let i = 0; i < 1024 * 2 + 2; i++) snapshotText(`{"unique":${i},"u":"${Math.random()}"}`);
    expect(textMemo().size).toBeLessThanOrEqual(1024);
    expect(textMemo().resting).toBe(true);
    // Resting, a text is parsed as before: equal, frozen, a new object each time.
    const one = snapshotText('{"a":[1,{"b":2}]}');
    const two = snapshotText('{"a":[1,{"b":2}]}');
    expect(one).toEqual(two);
    expect(one).not.toBe(two);
    expect(deepFrozen(one)).toBe(true);
    for (let i = 0; i < 1024 * 8 + 1; i++) snapshotText('{}');
    expect(textMemo().resting).toBe(false);
    const three = snapshotText('{"a":[1,{"b":2}]}');
    expect(snapshotText('{"a":[1,{"b":2}]}')).toBe(three);
  });

  it('rests twice as long each time in a row it is not paying, and the first length again once it pays', () => {
    const who = ['backoff', 'b'] as const;
    const unique = (): void => {
      for (let i = 0; i < 1024 * 2 + 2; i++) snapshotText(`{"unique":${i},"u":"${Math.random()}"}`, ...who);
    };
    /** Calls until the memo is in use again (each text that would then be met is not sent). */
    const restLength = (): number => {
      let calls = 0;
      for (; textMemo(...who).resting; calls++) snapshotText('{}', ...who);
      return calls;
    };
    // Each rest starts inside `unique()`, which spends up to 1,024 + 2 of its calls resting.
    unique();
    const first = restLength();
    expect(first).toBeGreaterThan(1024 * 7 - 2);
    expect(first).toBeLessThanOrEqual(1024 * 8);
    unique();
    const second = restLength();
    expect(second).toBeGreaterThan(1024 * 15 - 2);
    expect(second).toBeLessThanOrEqual(1024 * 16);
    unique();
    expect(restLength()).toBeGreaterThan(1024 * 31 - 2);
    // Paying (each text met twice): judged so when emptied, and its next rest is the first length again.
    for (let i = 0; i < 1024 * 3; i++) snapshotText(`{"pair":${i >> 1},"u":"p"}`, ...who);
    expect(textMemo(...who).resting).toBe(false);
    unique();
    expect(restLength()).toBeLessThanOrEqual(1024 * 8);
    // Never longer than sixteen times the first.
    for (let round = 0; round < 6; round++) {
      unique();
      expect(restLength()).toBeLessThanOrEqual(1024 * 8 * 16);
    }
  });

  it('the gate decides and runs a call whose text hits the memo as the same call read without it', async () => {
    const received: unknown[] = [];
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'refund',
        parameters: {
          type: 'object',
          properties: { amount: { type: 'integer', minimum: 0 }, note: { type: 'string' } },
          required: ['amount'],
        },
        execute: (args) => {
          received.push(args);
          return `refunded ${String(args['amount'])}`;
        },
      }),
    );
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [
          { name: 'big', tools: ['refund'], match: (_t, p) => Number(p['amount']) > 100, result: 'deny' },
          { name: 'small', tools: ['refund'], result: 'allow' },
        ],
      }),
    );
    const args = fc.oneof(
      fc
        .record({ amount: fc.integer({ min: -2, max: 200 }), note: fc.string({ maxLength: 4 }) })
        .map((o) => JSON.stringify(o)),
      fc.constantFrom(
        '{"amount":1,"amount":500}',
        '{"amount":1e400}',
        '{"amount":3,"__proto__":{}}',
        '[]',
        '{"amount":',
      ),
    );
    const strip = (result: unknown): unknown =>
      JSON.parse(JSON.stringify(result, (key, value: unknown) => (key === 'callId' ? '·' : value)));
    await fc.assert(
      fc.asyncProperty(args, async (text) => {
        const call = (id: string, a: string) => ({
          id,
          type: 'function' as const,
          function: { name: 'refund', arguments: a },
        });
        // Padded past the longest text kept: the same JSON, read without the memo (the path before it).
        const before = await registry.dispatch([call('a', `${text}${' '.repeat(300)}`)]);
        const first = await registry.dispatch([call('b', text)]);
        const again = await registry.dispatch([call('c', text)]);
        const shaped = await registry.executeToolCalls([call('d', text)]);
        const shapedBefore = await registry.executeToolCalls([call('d', `${' '.repeat(300)}${text}`)]);
        expect(strip(first)).toEqual(strip(before));
        expect(strip(again)).toEqual(strip(before));
        expect(shaped).toEqual(shapedBefore);
        for (const r of [...first, ...again])
          if (r.status === 'ok' || r.status === 'refused') expect(deepFrozen(r.decision.parameters)).toBe(true);
      }),
      { numRuns: 150 },
    );
    for (const r of received) expect(deepFrozen(r)).toBe(true);
  });
});
