/**
 * Attack (argument validation, src/schema.ts, the 2019-09 / 2020-12 Ajv): Ajv's `contains` marks every item of the
 * array evaluated once it is there, where 2020-12 counts only the items it matched (and 2019-09 none). A tuple closed
 * with `unevaluatedItems: false` beside a `contains` let any extra item through: `['a', { admin: true }, 5]` ran
 * where `prefixItems: [string]`, `contains: string`, `unevaluatedItems: false` refuses the last two.
 */
import { describe, expect, it } from 'vitest';
import { registryWith } from './fixtures/schema-tool.js';

const D2019 = 'https://json-schema.org/draft/2019-09/schema';
const D2020 = 'https://json-schema.org/draft/2020-12/schema';

const LIST = {
  type: 'array',
  prefixItems: [{ type: 'string' }],
  contains: { type: 'string' },
  unevaluatedItems: false,
};

describe('unevaluatedItems beside contains', () => {
  it.each([
    [
      'declared 2020-12',
      { $schema: D2020, type: 'object', properties: { list: LIST } },
      { list: ['a', { admin: true }, 5] },
    ],
    ['no $schema', { type: 'object', properties: { list: LIST } }, { list: ['a', { admin: true }, 5] }],
    [
      'contains in an allOf (2020-12)',
      {
        $schema: D2020,
        type: 'object',
        properties: { list: { type: 'array', allOf: [{ contains: { const: 'x' } }], unevaluatedItems: false } },
      },
      { list: ['x', 'admin', 5] },
    ],
    [
      'declared 2019-09 (contains evaluates nothing there)',
      {
        $schema: D2019,
        type: 'object',
        properties: {
          list: { type: 'array', items: [{ type: 'string' }], contains: { type: 'string' }, unevaluatedItems: false },
        },
      },
      { list: ['a', 'b'] },
    ],
  ])('%s: the unevaluated items never run', async (_label, schema, args) => {
    let registered: ReturnType<typeof registryWith> | undefined;
    try {
      registered = registryWith(schema);
    } catch (error) {
      expect(String(error)).toMatch(/unevaluatedItems beside contains/);
      return;
    }
    const { registry, ran } = registered;
    expect((await registry.invoke('pay', args)).status).toBe('refused');
    expect(ran).toEqual([]);
  });
});
