/**
 * Attack (availability, branch `schemaround`, src/schema-cost.ts counts `dependencies` arrays and `dependentRequired`
 * as nothing): Ajv's property dependencies write, for each name a present property requires, an error object whose
 * params (`deps`) and message repeat the whole list of names: n names write ~2·n² characters. A schema of one
 * property depending on n short names is a few KB and its code is quadratic in it:
 *
 *   {"type":"object","dependencies":{"a":["p0","p1",…,"p{n-1}"]}}      (or `dependentRequired`, 2019-09 / 2020-12)
 *
 * ~700 names (5 KB) write ~6 M characters, past SCHEMA_CODE_MAX, all of it in one function before src/schema-bounds.ts
 * can count it; Ajv also builds each site's copy of the list (JSON.stringify) before rendering, so the memory held is
 * quadratic too: 20,000 names (~150 KB, well under an upstream's 1 MB) is n² ≈ 4·10^8 × 8 characters, past the heap
 * (the process dies, every tenant's calls with it; see the report for the measured figures). Fails on `schemaround`
 * (af4cceb); passes once such a schema is refused before Ajv writes (or Ajv's keyword is replaced by linear code).
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { codeWritten, SCHEMA_CODE_MAX } from '../../src/schema-bounds.js';
import { codeAtLeast } from '../../src/schema-cost.js';

const names = (n: number): string[] => Array.from({ length: n }, (_, i) => `p${i}`);

describe('property dependencies: code quadratic in the names', () => {
  const cases: readonly (readonly [string, JsonSchema])[] = [
    ['dependencies (draft-07)', { type: 'object', dependencies: { a: names(700) } }],
    [
      'dependentRequired (2020-12)',
      { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', dependentRequired: { a: names(700) } },
    ],
  ];
  for (const [name, schema] of cases)
    it(`${name}: a 5 KB schema writes no more than SCHEMA_CODE_MAX`, () => {
      expect(JSON.stringify(schema).length).toBeLessThan(6_000);
      try {
        compileValidator(schema);
      } catch {
        // refused: before any code (the mend), or after the function is written (now)
      }
      expect(codeWritten()).toBeLessThanOrEqual(SCHEMA_CODE_MAX);
    });

  it.each([1, 2, 50, 300])(
    '%i names (both keywords, names to escape): the bound is at most the code Ajv writes',
    (n) => {
      const list = Array.from({ length: n }, (_, i) => `p"${i}é`);
      for (const schema of [
        { type: 'object', dependencies: { a: list, b: { required: ['c'] } } },
        { $schema: 'https://json-schema.org/draft/2020-12/schema', dependentRequired: { a: list, z: [] } },
        { not: { dependencies: { a: list } } },
      ] as JsonSchema[]) {
        compileValidator(schema);
        expect(codeAtLeast(schema)).toBeLessThanOrEqual(codeWritten());
      }
    },
  );
});
