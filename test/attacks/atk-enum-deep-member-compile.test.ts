/**
 * Attack (refused valid, fail-closed; branch `schemaround`, src/schema-enum.ts `membersOf`): the members' table is
 * built by a recursion of two frames a level (`idIn`, `structureId`) with no bound of depth at compile time, so an
 * `enum` or `const` member some 2,000 levels deep (tsx on this machine: 1,500 compiled, 2,000 did not; 6 KB of
 * schema) no longer compiles: "Maximum call stack size exceeded", the tool refused at `defineTool` (an upstream's,
 * at each listing). Ajv's own keyword compiled it and passed the member itself (its `equal`: one frame a level).
 * Fails on `schemaround` af4cceb.
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';
import { ALL_ERRORS_OPTIONS } from './fixtures/allerrors-reference.js';

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

/** `levels` nested arrays, read from JSON text (as an upstream's schema is). */
const nested = (levels: number): unknown => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);

describe('a deep member compiles, as in Ajv', () => {
  it.each([
    ['enum', (member: unknown) => ({ enum: [member, 'x'] })],
    ['const', (member: unknown) => ({ const: member })],
  ])('%s: a member 3,000 levels deep compiles and passes itself', (_k, keyword) => {
    const schema = keyword(nested(3000)) as JsonSchema;
    const reference = new Ajv({ ...ALL_ERRORS_OPTIONS, inlineRefs: false });
    expect(reference.validate(schema, nested(3000))).toBe(true);
    expect(sync(compileValidator(schema)(nested(3000) as never)).ok).toBe(true);
  });
});
