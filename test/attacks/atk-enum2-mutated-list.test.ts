/**
 * Attack (fail-open, src/schema-enum.ts tableOf): the tables are kept by the schema's `enum` list (or `const` value)
 * object in a process-wide WeakMap, but src/schema.ts shares a compiled check only by the schema's JSON text and Ajv
 * forgets each schema it compiled. A list written in code and changed in place (an allowlist a config reload edits,
 * a denylist that grows) compiles again — its text differs — yet the old table answers: a value Ajv refuses passes.
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}
const reference = (schema: JsonSchema, value: unknown) =>
  new Ajv({ allErrors: true, strict: false }).compile(schema)(value);

describe('enum/const tables keyed by a list changed in place', () => {
  it('an allowlist entry removed in place still passes (enum)', () => {
    const allowed = ['/srv/public', '/srv/secret'];
    const schema = { type: 'object', properties: { path: { enum: allowed } }, required: ['path'] } as const;
    expect(sync(compileValidator(schema as unknown as JsonSchema)({ path: '/srv/secret' })).ok).toBe(true);
    allowed.pop(); // revoked
    const value = { path: '/srv/secret' };
    expect(reference(schema as unknown as JsonSchema, value)).toBe(false);
    expect(sync(compileValidator(schema as unknown as JsonSchema)(value)).ok).toBe(false);
  });

  it('a denylist grown in place lets the new entry through `not: {enum}`', () => {
    const denied: string[] = ['rm'];
    const schema = { type: 'object', properties: { cmd: { not: { enum: denied } } } };
    expect(sync(compileValidator(schema as JsonSchema)({ cmd: 'ls' })).ok).toBe(true);
    denied.push('shutdown');
    const value = { cmd: 'shutdown' };
    expect(reference(schema as JsonSchema, value)).toBe(false);
    expect(sync(compileValidator(schema as JsonSchema)(value)).ok).toBe(false);
  });

  it('a const object changed in place keeps its old table', () => {
    const pinned: { host: string } = { host: 'a.example' };
    const schema = { type: 'object', properties: { target: { const: pinned } } };
    expect(sync(compileValidator(schema as JsonSchema)({ target: { host: 'a.example' } })).ok).toBe(true);
    pinned.host = 'b.example';
    const value = { target: { host: 'a.example' } };
    expect(reference(schema as JsonSchema, value)).toBe(false);
    expect(sync(compileValidator(schema as JsonSchema)(value)).ok).toBe(false);
  });
});
