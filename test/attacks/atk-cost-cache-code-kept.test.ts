/**
 * Attack (memory, branch `schemaround`, src/schema.ts's bound of the compiled validators kept): the bound counts the
 * schemas' text (then COMPILED_TEXT_MAX, 16 M characters), but what an entry holds is its compiled check, whose code is not
 * bounded by its text: a schema of 14 KB (one key of 10,000 characters above 180 checked strings: each error site
 * repeats the key) compiles, under SCHEMA_CODE_MAX, to ~3.6 M characters of code, ~250 × its text. An upstream relisting
 * new such schemas fills the 16 M characters of text with ~1,100 of them: ~4 G characters of code kept, every one
 * compiled under every bound (see the report for the heap measured per entry). Five of them already keep more code than
 * the text bound allows. Fails on `schemaround` (af4cceb); passes once what an entry keeps is counted by its code (or
 * such a check is not kept): the bound is now COMPILED_SIZE_MAX characters of text and code.
 */
import { describe, expect, it } from 'vitest';
import { COMPILED_SIZE_MAX, compiledKept, compileValidator, type JsonSchema } from '../../src/schema.js';
import { codeWritten, SCHEMA_CODE_MAX } from '../../src/schema-bounds.js';

/** One key of 10,000 characters above `count` checked strings; `title` makes each text its own. */
function heavy(title: string, count: number): JsonSchema {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) properties[`p${i}`] = { minLength: 1 };
  return { type: 'object', title, properties: { ['k'.repeat(10_000)]: { type: 'object', properties } } };
}

describe('the compiled validators kept by schema text', () => {
  it('keep no more compiled code than COMPILED_SIZE_MAX characters', () => {
    const before = compiledKept();
    const codes: number[] = [];
    for (let i = 0; i < 5; i++) {
      compileValidator(heavy(`t${i}`, 180));
      expect(codeWritten()).toBeLessThanOrEqual(SCHEMA_CODE_MAX); // each compiles within every bound
      codes.push(codeWritten());
    }
    const after = compiledKept();
    const kept = after.entries - before.entries;
    // The entries kept are the most recent (least recently used dropped first): all five, ~18 M characters of code.
    const code = codes.slice(codes.length - kept).reduce((sum, n) => sum + n, 0);
    expect(kept).toBe(5);
    // What keeps them is counted with their code, against COMPILED_SIZE_MAX.
    expect(after.size - before.size).toBeGreaterThanOrEqual(code);
    expect(after.size).toBeLessThanOrEqual(COMPILED_SIZE_MAX);
  });
});
