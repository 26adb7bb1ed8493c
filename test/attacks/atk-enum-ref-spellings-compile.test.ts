/**
 * Attack (availability, compile time, branch `schemaround`, src/schema-enum.ts `membersOf`): the table of an `enum`'s
 * (or a `const`'s) members is built each time Ajv writes the keyword's code, and Ajv writes a `$ref` target's code
 * once per spelling of its URI (`#/$defs/$$`, `#/$defs/%24$`, …: `inlineRefs: false`). The code each spelling writes
 * no longer holds the members (a scope value, where Ajv wrote `data === "…"` for each of up to 199 scalars), so the
 * bound of code written (SCHEMA_CODE_MAX) no longer bounds the spellings × members: an upstream's tools/list entry
 * of one large enum and thousands of spellings is the table built thousands of times, at each relisting (a schema
 * that does not compile is not kept). Ajv's own `enum` of 200 members or more (its loop) or of objects read none of
 * them at compile time. Measured (tsx, this machine, scratch script not committed): `$defs` holding an `enum` of
 * 80,000 strings and 512 spellings of its URI (732 KB): 6.5 s CPU and 1.46 GB of heap for one compilation; with
 * 4,096 spellings (921 KB) the process died, out of its 4 GB heap (each spelling's table kept alive while the schema
 * compiles), before the bound of code written stopped it — the reference Ajv compiled that schema in 5.3 s, 92 MB.
 * Counted here: the reads of one object member, behind a Proxy, while the schema compiles. Fails on `schemaround`
 * af4cceb.
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema } from '../../src/schema.js';

/** An array of `length` zeros behind a Proxy counting every operation on it. */
function countedZeros(length: number, count: { n: number }): unknown[] {
  const traps: ProxyHandler<object> = {};
  for (const trap of ['get', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'getPrototypeOf'] as const)
    (traps as Record<string, unknown>)[trap] = (...args: unknown[]) => {
      count.n++;
      return (Reflect[trap] as (...a: unknown[]) => unknown)(...args);
    };
  return new Proxy(
    Array.from({ length }, () => 0),
    traps,
  ) as unknown[];
}

/** The 2^name.length spellings of `#/$defs/<name>` for a name of `$`s: each `$` as itself or as `%24`. */
function spellings(name: string): string[] {
  return Array.from(
    { length: 2 ** name.length },
    (_, mask) => `#/$defs/${[...name].map((c, i) => ((mask >> i) & 1 ? '%24' : c)).join('')}`,
  );
}

describe("an enum's table is built once per schema, not once per spelling of a reference to it", () => {
  it.each([
    ['enum', (member: unknown) => ({ enum: [member, 'x'] })],
    ['const', (member: unknown) => ({ const: member })],
  ])('%s: 64 spellings of one target holding a member of 2,000 parts', (_k, keyword) => {
    const size = 2000;
    const count = { n: 0 };
    const name = '$$$$$$';
    const refs = spellings(name);
    const schema = {
      type: 'object',
      $defs: { [name]: keyword(countedZeros(size, count)) },
      properties: Object.fromEntries(refs.map((ref, i) => [`p${i}`, { $ref: ref }])),
    };
    compileValidator(schema as JsonSchema);
    // The schema read whole a few times (its JSON text, plain-data check): ~4 operations a part. The table built
    // once per spelling: 64 × ~4 a part.
    expect(count.n).toBeLessThan(20 * size);
  });
});
