/**
 * Attack (false refusal, src/schema-pointers.ts URI_CHARACTERS_MAX, 483af28): the bound of 2^20 characters of URIs
 * "in all" charges every `$ref` with the whole of its base, however short. A tool schema with an ordinary root `$id`
 * (66 characters) and 11,000 properties of `{ $ref: "#/definitions/AReasonablyNamedType" }` (594 KB) is refused on
 * main as "many references under a long $id" — its `$id` is not long: 11,000 × 105 characters; it compiled on 0f199a9
 * (1.46 s, under the bound of code) and, without the root `$id`, compiles on main. `npx tsx tmp/p7.ts 11000`
 * (scratch) in each tree. Low to medium: a large generated schema (an OpenAPI document's, one `$id` at its root) is
 * refused by an upstream's tool list for no cost of its own (fast-uri resolves a 100-character URI in well under a
 * microsecond: 11,000 of them are nothing beside the compilation).
 *
 * Fix: charge the bound with the characters of long URIs only (a base or a resolved URI past, say, 1,024 characters:
 * the cost 483af28 measured is 1,000 refs × 16,000 characters), or raise it to what its measurement supports.
 */
import { describe, expect, it } from 'vitest';
import { compileValidator } from '../../src/schema.js';

describe('many short $refs under a short root $id', () => {
  it('11,000 $refs of 36 characters under a 66-character $id compile (main: refused by the bound of URIs)', () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 11_000; i++) properties[`p${i}`] = { $ref: '#/definitions/AReasonablyNamedType' };
    const schema = {
      $id: 'https://schemas.example.com/tools/some-tool/v1/input.schema.json',
      type: 'object',
      properties,
      definitions: { AReasonablyNamedType: { type: 'string' } },
    };
    let reason = '';
    try {
      const validate = compileValidator(schema as never);
      expect(validate({ p0: 'x' })).toEqual({ ok: true, value: { p0: 'x' } });
    } catch (error) {
      reason = (error as Error).message;
    }
    expect(reason).toBe('');
  });
});
