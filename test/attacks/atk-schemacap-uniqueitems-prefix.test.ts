/**
 * Attack (fail open, src/schema-bounds.ts `uniqueItems`, JSON Schema 2020-12): the new keyword copies Ajv's choice of
 * its scalar case from the `items` keyword alone (`getSchemaTypes(parentSchema.items)`): when `items` allows only
 * scalar types, only items of those types are compared. In 2020-12 `items` applies only after `prefixItems`, so the
 * tuple's own items, objects or numbers, are never compared: two equal prefix items pass `uniqueItems: true`. The
 * reference Ajv does the same (the bug is Ajv's, and main's): this is no differential with it, but arguments the
 * schema refuses (JSON Schema 2020-12 §6.4.3) run the tool, and the keyword the branch rewrote keeps the hole.
 * Fails on `schemacap` and on main.
 */
import { describe, it } from 'vitest';
import { DIALECT_URI } from './fixtures/allerrors-reference.js';
import { neverRuns } from './fixtures/schema-tool.js';

const PAIR = {
  $schema: DIALECT_URI['2020-12'],
  type: 'object',
  required: ['pair'],
  properties: {
    pair: {
      type: 'array',
      prefixItems: [{ type: 'object' }, { type: 'object' }],
      items: { type: 'string' },
      uniqueItems: true,
    },
  },
};

describe('uniqueItems beside prefixItems and a scalar items', () => {
  it('two equal prefix objects never run the tool', async () => {
    await neverRuns(PAIR, { pair: [{ to: 'a' }, { to: 'a' }, 'memo'] }, /uniqueItems/);
  });

  it('two equal prefix numbers never run the tool', async () => {
    const schema = {
      $schema: DIALECT_URI['2020-12'],
      type: 'object',
      properties: {
        ids: {
          type: 'array',
          prefixItems: [{ type: 'integer' }, { type: 'integer' }],
          items: { type: 'string' },
          uniqueItems: true,
        },
      },
    };
    await neverRuns(schema, { ids: [7, 7] }, /uniqueItems/);
  });
});
