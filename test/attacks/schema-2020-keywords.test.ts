/**
 * Attack (argument validation, src/schema.ts): the registry's Ajv is the draft-07 one, compiled with
 * `strict: false`, so a keyword of JSON Schema 2019-09 / 2020-12 it does not implement was ignored without a
 * word: a tool whose schema refuses `{ a: [1] }` with `prefixItems`, or `{ card: 1 }` without `cvv` with
 * `dependentRequired`, ran with exactly those arguments. MCP's default dialect is 2020-12 and every MCP tool's
 * `inputSchema` is compiled here (src/mcp/tools.ts), as is every defineTool schema. Such a schema is now
 * compiled by Ajv's 2020-12 class, which implements those keywords; a draft-07 schema compiles as before.
 */
import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import { defineTool, type ToolRegistry } from '../../src/index.js';
import { registryWith } from './fixtures/schema-tool.js';

const obj = (extra: Record<string, unknown>) => ({ type: 'object', ...extra });

// [label, schema, arguments it refuses, arguments it accepts]
const CASES: [string, Record<string, unknown>, Record<string, unknown>, Record<string, unknown>][] = [
  [
    'prefixItems',
    obj({ properties: { a: { type: 'array', prefixItems: [{ type: 'string' }] } } }),
    { a: [1] },
    { a: ['x', 1] },
  ],
  [
    'prefixItems with items: false',
    obj({ properties: { a: { type: 'array', prefixItems: [{ type: 'string' }], items: false } } }),
    { a: ['x', 'y'] },
    { a: ['x'] },
  ],
  ['dependentRequired', obj({ dependentRequired: { card: ['cvv'] } }), { card: 1 }, { card: 1, cvv: 2 }],
  [
    'dependentRequired, $async',
    obj({ $async: true, dependentRequired: { card: ['cvv'] } }),
    { card: 1 },
    { card: 1, cvv: 2 },
  ],
  [
    'dependentSchemas',
    obj({ dependentSchemas: { card: { properties: { cvv: { type: 'string' } } } } }),
    { card: 1, cvv: 2 },
    { card: 1, cvv: '2' },
  ],
  [
    'unevaluatedProperties',
    obj({ allOf: [{ properties: { a: {} } }], unevaluatedProperties: false }),
    { a: 1, admin: true },
    { a: 1 },
  ],
  [
    'minContains / maxContains',
    obj({ properties: { a: { type: 'array', contains: { const: 'x' }, minContains: 2, maxContains: 2 } } }),
    { a: ['x'] },
    { a: ['x', 'x', 'y'] },
  ],
  [
    'unevaluatedItems',
    obj({ properties: { a: { type: 'array', prefixItems: [{}], unevaluatedItems: false } } }),
    { a: [1, 2] },
    { a: [1] },
  ],
  [
    '$dynamicRef',
    obj({
      $dynamicAnchor: 'node',
      properties: { n: { type: 'integer', maximum: 10 }, child: { $dynamicRef: '#node' } },
    }),
    { n: 1, child: { n: 1000 } },
    { n: 1, child: { n: 2 } },
  ],
];

describe('a JSON Schema with 2019-09 / 2020-12 keywords', () => {
  for (const [label, schema, refused, accepted] of CASES) {
    it(`${label}: refuses what the schema refuses, runs what it accepts`, async () => {
      const { registry, ran } = registryWith(schema);
      const result = await registry.invoke('pay', refused);
      expect(result.status).toBe('refused');
      expect(result.decision).toMatchObject({ effect: 'deny', stage: 'validation', by: 'invalid_arguments' });
      const [batch] = await registry.executeToolCalls([{ id: 'c1', name: 'pay', arguments: JSON.stringify(refused) }]);
      expect(batch).toMatchObject({ isError: true });
      expect(ran).toEqual([]);
      expect(await registry.invoke('pay', accepted)).toMatchObject({ status: 'ok', content: 'paid' });
      expect(ran).toEqual([accepted]);
    });
  }

  it('a draft-07 schema compiles and validates as before (tuple items, additionalItems, dependencies)', async () => {
    const { registry, ran } = registryWith(
      obj({
        properties: { a: { type: 'array', items: [{ type: 'string' }], additionalItems: false } },
        dependencies: { card: ['cvv'] },
      }),
    );
    expect((await registry.invoke('pay', { a: [1] })).status).toBe('refused');
    expect((await registry.invoke('pay', { a: ['x', 'y'] })).status).toBe('refused');
    expect((await registry.invoke('pay', { card: 1 })).status).toBe('refused');
    expect(await registry.invoke('pay', { a: ['x'], card: 1, cvv: 2 })).toMatchObject({ status: 'ok' });
    expect(ran).toHaveLength(1);
  });

  it('a schema mixing draft-07 tuple items with a 2020-12 keyword does not compile (never half read)', () => {
    expect(() =>
      defineTool({
        name: 'pay',
        parameters: obj({
          dependentRequired: { card: ['cvv'] },
          properties: { a: { type: 'array', items: [{ type: 'string' }] } },
        }),
        execute: () => 'paid',
      }),
    ).toThrow(/does not compile/);
  });

  it('a property named like a 2020-12 keyword keeps a draft-07 schema draft-07', async () => {
    const { registry } = registryWith(
      obj({ properties: { prefixItems: { type: 'array', items: [{ type: 'string' }], additionalItems: false } } }),
    );
    expect((await registry.invoke('pay', { prefixItems: ['x', 'y'] })).status).toBe('refused');
    expect(await registry.invoke('pay', { prefixItems: ['x'] })).toMatchObject({ status: 'ok' });
  });
});

describe('a draft-07 schema decides as the draft-07 Ajv does (seeded random arguments)', () => {
  const SCHEMAS: Record<string, unknown>[] = [
    obj({ properties: { a: { type: 'array', items: [{ type: 'string' }], additionalItems: { type: 'integer' } } } }),
    obj({ dependencies: { a: ['b'], c: { required: ['d'] } }, properties: { b: { type: 'integer', minimum: 0 } } }),
    obj({
      definitions: { n: { type: 'integer', maximum: 3 } },
      properties: { a: { $ref: '#/definitions/n' }, b: { type: 'array', contains: { const: 1 } } },
      additionalProperties: false,
    }),
    obj({ properties: { a: { enum: ['x', 1, null] }, b: { anyOf: [{ type: 'string' }, { minimum: 2 }] } } }),
  ];
  const VALUES: unknown[] = [0, 1, 2, 5, -1, 'x', 'y', null, true, [], [1], ['x'], ['x', 1], ['x', 'y'], [1, 2], {}];
  const KEYS = ['a', 'b', 'c', 'd', 'e'];

  it('gate and a fresh draft-07 Ajv agree on every call', async () => {
    let seed = 7;
    const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n) | 0;
    const reference = new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false });
    for (const schema of SCHEMAS) {
      const { registry } = registryWith(schema);
      const check = reference.compile(schema);
      for (let i = 0; i < 150; i++) {
        const args: Record<string, unknown> = {};
        for (const key of KEYS) if (rand(2) === 0) args[key] = VALUES[rand(VALUES.length)];
        const result = await registry.invoke('pay', args);
        expect(result.status, `${JSON.stringify(schema)} ${JSON.stringify(args)}`).toBe(check(args) ? 'ok' : 'refused');
      }
    }
  });
});

describe('$async: true with $dynamicRef / $recursiveRef', () => {
  // Ajv calls the target of a $dynamicRef (the async root) as a synchronous check: its promise read as valid, a
  // nested object the schema refuses passed, the root's rejection left unhandled.
  const SCHEMAS: Record<string, unknown>[] = [
    obj({
      $async: true,
      $dynamicAnchor: 'node',
      properties: { n: { type: 'integer', maximum: 10 }, child: { $dynamicRef: '#node' } },
    }),
    obj({ $async: true, properties: { n: { type: 'integer', maximum: 10 }, child: { $recursiveRef: '#' } } }),
  ];
  for (const schema of SCHEMAS) {
    it(`never runs a call its schema refuses (${Object.keys(schema).join(', ')})`, async () => {
      let registered: { registry: ToolRegistry; ran: unknown[] } | null = null;
      try {
        registered = registryWith(schema);
      } catch (error) {
        expect(String(error)).toMatch(/does not compile/);
      }
      if (registered === null) return;
      const { registry, ran } = registered;
      expect((await registry.invoke('pay', { n: 1, child: { n: 1000 } })).status).toBe('refused');
      expect(ran).toEqual([]);
    });
  }
});
