/**
 * Attack (availability, branch `schemaround`, src/schema-enum.ts `idIn`): a part of the value looked up is kept
 * (its id, or none) unless its walk stopped at the budget it had where it was read ("LARGER below the whole
 * budget"): a value DEEPER than the deepest member is walked anew, down to the members' depth, at every level the
 * keyword applies. A recursive schema (`anyOf: [{enum: [member]}, {items: {$ref: '#'}}]`, or `const`) applied to a
 * value of L levels with a member of D levels reads (L − D) · D levels: depth² again, the case the module's comment
 * says is gone (the existing test only checks a value shallower than the member, which completes and is kept).
 * Each level read is a prototype, the keys, a descriptor and a Map look-up of a new text; a width W of scalars at
 * each level multiplies it (scalars are never kept). An upstream writes both the schema and the content (MCP output
 * schemas), and a tool's schema meets arguments a model writes. Measured (tsx, this machine): a member of 1,400
 * levels of 30 zeros (87 KB of schema) and arguments of 2,800 such levels (174 KB of JSON text) through
 * executeToolCalls: 6.5 s CPU for one call that runs (the gateway's output path: 7.1 s); Ajv's own `enum`, 47 ms.
 * A member 1,000 levels deep, 2,000-level arguments of 10 zeros a level (44 KB): 2.0 s, Ajv 23 ms. Fails on
 * `schemaround` af4cceb.
 */
import { describe, expect, it } from 'vitest';
import { counted } from './fixtures/counted-reads.js';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

/** `levels` nested arrays, each holding `width` zeros before the next level (the innermost: the zeros alone). */
function chain(levels: number, width: number): unknown {
  const zeros = (): number[] => Array.from({ length: width }, () => 0);
  let value: unknown = zeros();
  for (let i = 1; i < levels; i++) value = [...zeros(), value];
  return value;
}

/** `keyword`, a number, or an array whose items are the same again (a tree), at `#/$defs/node`. */
const recursive = (keyword: Record<string, unknown>, root: Record<string, unknown> = { $ref: '#/$defs/node' }) =>
  ({
    ...root,
    $defs: { node: { anyOf: [keyword, { type: 'number' }, { type: 'array', items: { $ref: '#/$defs/node' } }] } },
  }) as JsonSchema;

describe('a value deeper than every member, the keyword applied at each of its levels', () => {
  it.each([
    ['enum', (member: unknown) => ({ enum: [member, 'x'] })],
    ['const', (member: unknown) => ({ const: member })],
  ])('%s: a member 300 levels deep, a value 600 levels deep: each level read a bounded number of times', (_k, kw) => {
    const depth = 300;
    const validate = compileValidator(recursive(kw(chain(depth, 0))));
    const count = { n: 0 };
    expect(sync(validate(counted(chain(2 * depth, 0), count) as never)).ok).toBe(true);
    // Ajv's own code: anyOf and items read each level a few times. Here: ~300 × 300 levels, ~5 operations each.
    expect(count.n).toBeLessThan(20 * 2 * depth);
  });

  it("the gateway's output-schema path: 100 levels of 20 zeros in the member, 200 in the upstream's content", () => {
    const [depth, width] = [100, 20];
    const validate = outputSchemaValidator.getValidator(
      recursive(
        { enum: [chain(depth, width), 'x'] },
        { type: 'object', properties: { tree: { $ref: '#/$defs/node' } } },
      ) as never,
    );
    const count = { n: 0 };
    expect(validate({ tree: counted(chain(2 * depth, width), count) }).valid).toBe(true);
    // The content's parts: 200 × 21. Read: ~100 × 100 × 20 descriptors of zeros, and the levels' own reads.
    expect(count.n).toBeLessThan(20 * 2 * depth * (width + 1));
  });
});
