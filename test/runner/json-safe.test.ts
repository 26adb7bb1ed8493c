import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonSafe } from '../../src/runner/run.js';

/** What the transcript held before the plain-data copy: the JSON round trip. */
function roundTrip(value: unknown): unknown {
  if (typeof value === 'string') return value;
  try {
    return JSON.parse(JSON.stringify(value ?? {})) as unknown;
  } catch {
    return String(value);
  }
}

class Point {
  readonly x: number;
  constructor(x: number) {
    this.x = x;
  }
}

describe("runner: a call's arguments as JSON carries them (jsonSafe)", () => {
  it('is the JSON round trip for any JSON-like value (-0, NaN, undefined, nested, arrays)', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withNullPrototype: true,
          withBoxedValues: true,
          withSparseArray: true,
          withMap: true,
          withSet: true,
          withDate: true,
          maxDepth: 10,
        }),
        (value) => {
          expect(JSON.stringify(jsonSafe(value))).toBe(JSON.stringify(roundTrip(value)));
          expect(jsonSafe(value)).toStrictEqual(roundTrip(value));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('is the round trip for the edge cases, and never the same object', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['self'] = cyclic;
    const withToJson = { a: 1, toJSON: () => ({ b: 2 }) };
    const proto = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as unknown;
    const deep = JSON.parse('[[[[[[[[[[[{"a":[1,2]}]]]]]]]]]]]') as unknown;
    const cases: unknown[] = [
      undefined,
      null,
      { q: 'x' },
      { n: -0, m: [-0], big: 1e21, tiny: 5e-324 },
      { n: NaN, i: Infinity, u: undefined, f: () => 1 },
      [undefined, () => 1, NaN],
      { p: new Point(1), d: new Date(0) },
      Object.assign(Object.create(null) as object, { a: 1 }),
      cyclic,
      withToJson,
      proto,
      deep,
      { '2': 'b', '1': 'a', z: 'z', y: 'y' },
      'raw text',
      7,
      true,
    ];
    for (const value of cases) {
      const safe = jsonSafe(value);
      expect(safe).toStrictEqual(roundTrip(value));
      expect(JSON.stringify(safe)).toBe(JSON.stringify(roundTrip(value)));
      if (typeof value === 'object' && value !== null) expect(safe).not.toBe(value);
    }
    expect(Object.getPrototypeOf(jsonSafe(proto))).toBe(Object.prototype);
    expect(Object.keys(jsonSafe({ '2': 'b', '1': 'a', z: 'z', y: 'y' }) as object)).toEqual(['1', '2', 'z', 'y']);
  });

  it('lands a throwing getter in the String fallback, as the round trip did', () => {
    const value = Object.defineProperty({}, 'bad', {
      enumerable: true,
      get() {
        throw new Error('getter');
      },
    });
    expect(jsonSafe(value)).toBe(roundTrip(value));
  });
});
