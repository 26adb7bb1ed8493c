/**
 * Attack (argument validation, src/schema.ts `ajvFor`): the 2020-12 Ajv has no `additionalItems` (2020-12 dropped
 * it for `items` beside `prefixItems`) and, with `strict: false`, ignores it. A schema writing a tuple the way
 * draft-07 and 2019-09 close one — `prefixItems` with `additionalItems: false`, a rename of `items` alone — is read
 * by that Ajv (declared 2020-12, or no `$schema` and `prefixItems`): the extra items it refuses ran. As with a later
 * dialect's keyword in an earlier one, a keyword the reading dialect would ignore is refused by name.
 */
import { describe, expect, it } from 'vitest';
import { registryWith } from './fixtures/schema-tool.js';

const D2020 = 'https://json-schema.org/draft/2020-12/schema';
const PAIR = { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], additionalItems: false };

describe('additionalItems in a schema the 2020-12 Ajv reads', () => {
  it.each([
    ['no $schema', { type: 'object', properties: { pair: PAIR } }],
    ['declared 2020-12', { $schema: D2020, type: 'object', properties: { pair: PAIR } }],
    [
      'declared 2020-12, in $defs',
      { $schema: D2020, type: 'object', properties: { pair: { $ref: '#/$defs/p' } }, $defs: { p: PAIR } },
    ],
  ])('%s: a third item never runs', async (_label, schema) => {
    let registered: ReturnType<typeof registryWith> | undefined;
    try {
      registered = registryWith(schema);
    } catch (error) {
      expect(String(error)).toMatch(/additionalItems means nothing/);
      return;
    }
    const { registry, ran } = registered;
    expect((await registry.invoke('pay', { pair: ['a', 1, 'extra'] })).status).toBe('refused');
    expect(ran).toEqual([]);
  });

  it('a draft-07 tuple with additionalItems: false is read as before', async () => {
    const { registry, ran } = registryWith({
      type: 'object',
      properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }], additionalItems: false } },
    });
    expect((await registry.invoke('pay', { pair: ['a', 1, 'extra'] })).status).toBe('refused');
    expect((await registry.invoke('pay', { pair: ['a', 1] })).status).toBe('ok');
    expect(ran).toEqual([{ pair: ['a', 1] }]);
  });
});
