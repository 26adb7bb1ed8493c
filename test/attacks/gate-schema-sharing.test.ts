/**
 * Attack (issue 25, shared validators): two tools whose JSON Schemas serialise to the same JSON text but
 * validate differently must not share one compiled check. JSON.stringify writes ±Infinity and NaN as null,
 * drops undefined values, functions and inherited keywords, and calls toJSON; Ajv reads the object itself.
 * Each case registers the permissive schema first, then the strict one, and calls the strict tool with
 * arguments only the permissive schema accepts: the call must be refused and the tool must not run.
 */
import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../../src/index.js';
import type { JsonSchema } from '../../src/schema.js';

interface Case {
  readonly name: string;
  readonly lax: () => JsonSchema;
  readonly strict: () => JsonSchema;
  readonly args: Record<string, unknown>;
}

const obj = (n: Record<string, unknown>): JsonSchema => ({ type: 'object', properties: { n } });

const CASES: readonly Case[] = [
  {
    name: 'minimum -Infinity vs +Infinity (both "null")',
    lax: () => obj({ type: 'number', minimum: -Infinity }),
    strict: () => obj({ type: 'number', minimum: Infinity }),
    args: { n: 5 },
  },
  {
    name: 'maximum NaN vs -Infinity',
    lax: () => obj({ type: 'number', maximum: NaN }),
    strict: () => obj({ type: 'number', maximum: -Infinity }),
    args: { n: 5 },
  },
  {
    name: 'an inherited keyword (a prototype the JSON text does not show)',
    lax: () => ({ type: 'object' }),
    strict: () => Object.assign(Object.create({ required: ['confirm'] }) as object, { type: 'object' }),
    args: {},
  },
  {
    name: 'a non-enumerable keyword',
    lax: () => ({ type: 'object', properties: {} }),
    strict: () => Object.defineProperty({ type: 'object', properties: {} }, 'required', { value: ['confirm'] }),
    args: {},
  },
  {
    name: 'toJSON showing another schema',
    lax: () => ({ type: 'object' }),
    strict: () => ({ type: 'object', required: ['confirm'], toJSON: () => ({ type: 'object' }) }),
    args: {},
  },
  {
    name: 'enum [undefined] vs enum [null]',
    lax: () => obj({ enum: [null] }),
    strict: () => obj({ enum: [undefined] }),
    args: { n: null },
  },
  {
    name: 'const Date vs const its ISO string',
    lax: () => obj({ const: '1970-01-01T00:00:00.000Z' }),
    strict: () => obj({ const: new Date(0) }),
    args: { n: '1970-01-01T00:00:00.000Z' },
  },
];

describe('attack: tools with JSON-equal schemas that validate differently', () => {
  for (const [i, c] of CASES.entries()) {
    it(`does not share a check: ${c.name}`, async () => {
      const ran: string[] = [];
      const registry = new ToolRegistry({ confusables: 'off' });
      // A fresh spelling per case so that earlier cases' schemas are not what is shared.
      registry.register({ name: `lax_${i}`, parameters: c.lax(), execute: () => void ran.push('lax') });
      const lax = await registry.invoke(`lax_${i}`, c.args);
      expect(lax.isError).toBe(false);
      try {
        registry.register({ name: `strict_${i}`, parameters: c.strict(), execute: () => void ran.push('strict') });
      } catch (error) {
        // A schema Ajv cannot compile on its own is refused at registration: closed too.
        expect((error as Error).name).toBe('ConfigurationError');
        return;
      }
      const strict = await registry.invoke(`strict_${i}`, c.args);
      expect(strict.isError).toBe(true);
      expect(ran).toEqual(['lax']);
    });
  }

  it('JSON-plain schemas still share one validator (the issue-25 saving is kept)', () => {
    const registry = new ToolRegistry({ confusables: 'off' });
    const a = registry.register({ name: 'same_a', parameters: { type: 'object', required: ['x'] }, execute: () => 1 });
    const b = registry.register({ name: 'same_b', parameters: { type: 'object', required: ['x'] }, execute: () => 1 });
    expect(a.validate).toBe(b.validate);
  });
});

describe("attack: one registry's $id answering another's $ref (one Ajv per process)", () => {
  const ID = 'https://tenant.example/amount';
  const lax = { $id: ID, type: 'object', properties: { n: { type: 'number' } } };
  const strict = { $id: ID, type: 'object', properties: { n: { type: 'number', maximum: 10 } } };

  it('a $ref to an id the schema does not define is refused at registration, not resolved elsewhere', async () => {
    const a = new ToolRegistry({ confusables: 'off' });
    a.register({ name: 'lax_amount', parameters: lax, execute: () => 1 });
    const ran: string[] = [];
    const b = new ToolRegistry({ confusables: 'off' });
    let registered = true;
    try {
      b.register({ name: 'by_ref', parameters: { $ref: ID }, execute: () => void ran.push('by_ref') });
    } catch {
      registered = false;
    }
    if (registered) expect((await b.invoke('by_ref', { n: 5000 })).status).toBe('refused');
    expect(ran).toEqual([]);
  });

  it("another registry's schema with the same $id is its own", async () => {
    const a = new ToolRegistry({ confusables: 'off' });
    a.register({ name: 'lax_amount2', parameters: { ...lax }, execute: () => 1 });
    const ran: string[] = [];
    const b = new ToolRegistry({ confusables: 'off' });
    b.register({ name: 'strict_amount', parameters: { ...strict }, execute: () => void ran.push('strict') });
    expect((await b.invoke('strict_amount', { n: 5000 })).status).toBe('refused');
    expect((await b.invoke('strict_amount', { n: 5 })).status).toBe('ok');
    expect((await a.invoke('lax_amount2', { n: 5000 })).status).toBe('ok');
    expect(ran).toEqual(['strict']);
  });

  it('refs inside one schema still resolve (local, by its own $id, recursive)', async () => {
    const r = new ToolRegistry({ confusables: 'off' });
    r.register({
      name: 'tree',
      parameters: {
        $id: 'https://tenant.example/tree',
        type: 'object',
        properties: { v: { type: 'number' }, kids: { type: 'array', items: { $ref: 'https://tenant.example/tree' } } },
        $defs: { leaf: { type: 'string' } },
      },
      execute: () => 1,
    });
    expect((await r.invoke('tree', { kids: [{ v: 1, kids: [{ v: 2 }] }] })).status).toBe('ok');
    expect((await r.invoke('tree', { kids: [{ v: 1, kids: [{ v: 'x' }] }] })).status).toBe('refused');
  });
});
