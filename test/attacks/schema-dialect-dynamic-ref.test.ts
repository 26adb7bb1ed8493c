/**
 * Attack (argument validation, src/schema.ts, the 2020-12 Ajv a declared 2020-12 schema, or one using a 2019-09 /
 * 2020-12 keyword, is read by): Ajv resolves a `$dynamicRef: "#X"` to the function it is compiling when no
 * `$dynamicAnchor: X` was compiled before it, and otherwise to the first `$dynamicAnchor: X` any earlier part of
 * the same call ran — not the one the spec names. A `$dynamicRef` to an anchor under `$defs` checked the value
 * against the root instead (it let `{ amount: 1000 }` through a `maximum: 100`); one beside a static `$anchor` went
 * to the root's lax anchor; and with two resources declaring the anchor, the arguments chose: sending a property
 * the lax resource checks first made the strict one's `$dynamicRef` use the lax one.
 */
import { describe, expect, it } from 'vitest';
import { defineTool } from '../../src/index.js';
import { neverRuns as neverRunsUnder, registryWith } from './fixtures/schema-tool.js';

const D2020 = 'https://json-schema.org/draft/2020-12/schema';

function neverRuns(schema: Record<string, unknown>, args: Record<string, unknown>): Promise<void> {
  return neverRunsUnder(schema, args, /does not compile|\$dynamicRef|\$recursiveRef/);
}

const STRICT_NODE = { type: 'object', required: ['amount'], properties: { amount: { maximum: 100 } } };

describe('$dynamicRef read as the spec reads it, or not compiled', () => {
  it('to a $dynamicAnchor under $defs (declared 2020-12): the anchored schema, not the root', async () => {
    const schema = {
      $schema: D2020,
      type: 'object',
      properties: { child: { $dynamicRef: '#node' } },
      $defs: { node: { $dynamicAnchor: 'node', ...STRICT_NODE } },
    };
    await neverRuns(schema, { child: { amount: 1000 } });
    await neverRuns(schema, { child: {} });
  });

  it('to a $dynamicAnchor under $defs (no $schema): the anchored schema, not the root', async () => {
    const schema = {
      type: 'object',
      properties: { child: { $dynamicRef: '#node' } },
      $defs: { node: { $dynamicAnchor: 'node', ...STRICT_NODE } },
    };
    await neverRuns(schema, { child: { amount: 1000 } });
  });

  it("in a resource whose #node is a static $anchor: that anchor, not the root's dynamic one", async () => {
    const schema = {
      $schema: D2020,
      $dynamicAnchor: 'node',
      type: 'object',
      properties: { t: { $ref: 'https://x.test/tree' } },
      $defs: {
        tree: {
          $id: 'https://x.test/tree',
          type: 'object',
          properties: { kid: { $dynamicRef: '#node' } },
          $defs: { n: { $anchor: 'node', ...STRICT_NODE } },
        },
      },
    };
    await neverRuns(schema, { t: { kid: { amount: 1000 } } });
  });

  it('the arguments do not choose: a lax sibling resource run first does not answer the strict one', async () => {
    const schema = {
      $schema: D2020,
      type: 'object',
      properties: { a: { $ref: 'https://x.test/lax' }, b: { $ref: 'https://x.test/strict' } },
      $defs: {
        lax: { $id: 'https://x.test/lax', $dynamicAnchor: 'X', type: 'object' },
        strict: {
          $id: 'https://x.test/strict',
          $dynamicAnchor: 'X',
          ...STRICT_NODE,
          properties: { amount: { maximum: 100 }, kid: { $dynamicRef: '#X' } },
        },
      },
    };
    await neverRuns(schema, { b: { amount: 1, kid: { amount: 1000 } } });
    await neverRuns(schema, { a: {}, b: { amount: 1, kid: { amount: 1000 } } });
  });

  it("still reads the spec suite's strict-tree (the root and the resource both declare the anchor)", async () => {
    const schema = {
      $schema: D2020,
      $id: 'https://x.test/strict-tree',
      $dynamicAnchor: 'node',
      $ref: 'tree',
      unevaluatedProperties: false,
      $defs: {
        tree: {
          $id: 'https://x.test/tree',
          $dynamicAnchor: 'node',
          type: 'object',
          properties: { data: true, children: { type: 'array', items: { $dynamicRef: '#node' } } },
        },
      },
    };
    const { registry, ran } = registryWith(schema);
    expect((await registry.invoke('pay', { children: [{ daat: 1 }] })).status).toBe('refused');
    expect((await registry.invoke('pay', { children: [{ data: 1 }] })).status).toBe('ok');
    expect(ran).toEqual([{ children: [{ data: 1 }] }]);
    expect(() => defineTool({ name: 'ok', parameters: schema, execute: () => 1 })).not.toThrow();
  });
});
