/**
 * Attack (availability, src/schema.ts `forget`): one Ajv per dialect serves every registry of the process, and a
 * schema's ids are forgotten after it compiles — by `removeSchema(schema)`, which drops whatever the Ajv holds under
 * the schema's `$id`. A schema whose `$id` is a meta-schema's (`http://json-schema.org/draft-07/schema#`) does not
 * compile ("already exists"), and forgetting it dropped the meta-schema itself: from then on no draft-07 schema, and
 * no schema without `$schema`, compiled in any registry of the process ("no schema with key or ref") — one MCP
 * upstream's tool or one tenant's tool made every later tool unregistrable. The same for 2019-09 and 2020-12.
 */
import { describe, expect, it } from 'vitest';
import { defineTool } from '../../src/index.js';
import { registryWith } from './fixtures/schema-tool.js';

const D07 = 'http://json-schema.org/draft-07/schema#';
const D2019 = 'https://json-schema.org/draft/2019-09/schema';
const D2020 = 'https://json-schema.org/draft/2020-12/schema';

async function stillRead(schema: Record<string, unknown>): Promise<void> {
  const { registry, ran } = registryWith(schema);
  expect((await registry.invoke('pay', { amount: 'x' })).status).toBe('refused');
  expect((await registry.invoke('pay', { amount: 5 })).status).toBe('ok');
  expect(ran).toEqual([{ amount: 5 }]);
}

const amount = (extra: Record<string, unknown>) => ({
  type: 'object',
  properties: { amount: { type: 'number' } },
  ...extra,
});

describe("a schema whose $id is a meta-schema's", () => {
  it.each([
    ['draft-07', { $id: D07 }, [{}, { $schema: D07 }]],
    ['draft-07 (no #)', { $id: D07.slice(0, -1) }, [{}, { $schema: D07 }]],
    ['2019-09', { $schema: D2019, $id: D2019 }, [{ $schema: D2019 }]],
    ['2020-12', { $schema: D2020, $id: D2020 }, [{ $schema: D2020 }, { dependentRequired: {} }]],
  ])('%s: does not compile, and every later schema of that dialect still does', async (_label, attack, later) => {
    for (const extra of later) await stillRead(amount(extra)); // the Ajv made, its meta-schema used
    expect(() => defineTool({ name: 'evil', parameters: amount(attack), execute: () => 1 })).toThrow();
    // New schemas (an equal JSON text is answered by the compiled check, never recompiled).
    for (const extra of later) await stillRead(amount({ ...extra, title: `after ${JSON.stringify(attack)}` }));
  });
});
