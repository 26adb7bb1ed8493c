// extensibleCopy (copies.ts) stands in for `{ ...base, key }` on the gateway's per-call path (the call's gate
// context, the upstream request options, an item's approval binding): on random objects it gives what the
// spread gives — the same own keys in the same order, the same values, the same prototype — and an own
// `__proto__` key (JSON text makes one) stays an own key, never the copy's prototype.
import { describe, expect, it } from 'vitest';
import { extensibleCopy } from '../../src/gateway/copies.js';

/** A small seeded generator (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = ['agent', 'tenant', 'caller', 'signal', 'timeout', '__proto__', '0', '10', 'kind', 'target', 'x'];
const ADDED = KEYS.filter((k) => k !== '__proto__');
const SYMBOL = Symbol('scope');

/** A random base: a literal, JSON text's object (own `__proto__` possible), or one with a getter and a symbol. */
function base(next: () => number): Record<string | symbol, unknown> {
  const entries: [string, unknown][] = [];
  for (const key of KEYS) if (next() < 0.4) entries.push([key, next() < 0.5 ? { id: String(next()) } : next()]);
  const form = next();
  if (form < 0.4) return JSON.parse(JSON.stringify(Object.fromEntries(entries))) as Record<string, unknown>;
  if (form < 0.7) {
    const text = `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
    return JSON.parse(text) as Record<string, unknown>;
  }
  const object: Record<string | symbol, unknown> = {};
  for (const [k, v] of entries) if (k !== '__proto__') object[k] = v;
  Object.defineProperty(object, 'computed', { enumerable: true, get: () => 'got' });
  Object.defineProperty(object, 'hidden', { enumerable: false, value: 'not copied' });
  object[SYMBOL] = 'symbol';
  return object;
}

describe('extensibleCopy', () => {
  it('gives what `{ ...base, key: value }` gives, on random objects', () => {
    for (let seed = 1; seed <= 2_000; seed++) {
      const next = random(seed);
      const b = base(next);
      // The key added is a name of the code's own (never `__proto__`, which a store would not add as a key).
      const key = ADDED[Math.floor(next() * ADDED.length)]!;
      const value = { v: next() };
      const spread: Record<string | symbol, unknown> = { ...b, [key]: value };
      const copy = extensibleCopy(b);
      copy[key] = value;
      expect(Reflect.ownKeys(copy), `seed ${seed}`).toEqual(Reflect.ownKeys(spread));
      for (const k of Reflect.ownKeys(spread))
        expect(Object.getOwnPropertyDescriptor(copy, k), `seed ${seed} ${String(k)}`).toEqual(
          Object.getOwnPropertyDescriptor(spread, k),
        );
      expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    }
  });

  it("keeps an own `__proto__` key an own key, not the copy's prototype", () => {
    const b = JSON.parse('{"agent":"a","__proto__":{"caller":{"id":"root"}}}') as Record<string, unknown>;
    const copy = extensibleCopy(b) as Record<string, unknown>;
    copy['signal'] = 1;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(copy['caller']).toBeUndefined();
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect(Object.keys(copy)).toEqual(['agent', '__proto__', 'signal']);
  });
});
