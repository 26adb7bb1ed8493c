/**
 * Attack (argument validation, src/schema.ts `ajvFor`): only the root's `$schema` was read. A subschema declaring a
 * dialect toolgate does not read (an embedded resource may declare its own) was read in the root's: a draft-03
 * `divisibleBy: 5` meant nothing there and `{ n: 7 }` ran — the refusal by name the root gets ("is not a dialect
 * toolgate reads") never came, nor through MCP, which drops only the root's `$schema`.
 */
import { describe, expect, it } from 'vitest';
import { registryWith } from './fixtures/schema-tool.js';

const D03 = 'http://json-schema.org/draft-03/schema#';
const D2020 = 'https://json-schema.org/draft/2020-12/schema';
const N = { $id: 'https://x.test/n', $schema: D03, type: 'integer', divisibleBy: 5 };

describe('a subschema declaring a dialect toolgate does not read', () => {
  it.each([
    ['in a declared 2020-12 schema', { $schema: D2020, type: 'object', properties: { n: N } }],
    ['in a schema without $schema', { type: 'object', properties: { n: N } }],
    ['under $defs', { type: 'object', properties: { n: { $ref: 'https://x.test/n' } }, $defs: { n: N } }],
  ])('%s: never runs what it refuses', async (_label, schema) => {
    let registered: ReturnType<typeof registryWith> | undefined;
    try {
      registered = registryWith(schema);
    } catch (error) {
      expect(String(error)).toMatch(/is not a dialect toolgate reads/);
      return;
    }
    const { registry, ran } = registered;
    expect((await registry.invoke('pay', { n: 7 })).status).toBe('refused');
    expect(ran).toEqual([]);
  });
});
