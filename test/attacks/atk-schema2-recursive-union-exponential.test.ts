/**
 * Attack (availability, every JSON Schema check: `allErrors: true`, src/schema-dialects.ts): under `allErrors` a
 * union's branch goes on after its first failing keyword, into its recursive children, and a union of two recursive
 * shapes then walks every child twice per level — 2^depth for a value that passes. A tree of nodes as zod's
 * discriminated unions or any UI / AST / file-tree tool writes it (`oneOf` of `{kind: "group", children: [node…]}` and
 * `{kind: "list", children: [node…]}`, 367 bytes) and arguments nested 22 levels (662 bytes) took 443 ms at the gate,
 * each further level doubling it (26 levels, 778 bytes: ~5 s; 30: over a minute); `{anyOf: [{required: [b], properties: {a: {$ref: #}}},
 * {properties: {a: {$ref: #}}}]}` (96 bytes) 302 ms at 22 levels of `{"a": …}` (134 bytes), Ajv with its first-error
 * default 0 ms (`npx tsx tmp/expo2.mts 22`, `npx tsx tmp/expo.mts 22`, scratch, load ~6). The bound of errors does
 * not apply: the value passes, each failing branch holds one error. Not the known `$ref` chain (its exponent is in
 * the schema, which a limit on applications at compile time would bound): here it is in the value's depth.
 * Counted by the reads of each node's `children`, without a clock. Fails on main (eb19b7d).
 */
import { describe, expect, it } from 'vitest';
import { asyncCpuMs } from '../cpu.js';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { registryWith } from './fixtures/schema-tool.js';

const node = (kind: string): JsonSchema => ({
  type: 'object',
  required: ['kind'],
  properties: { kind: { const: kind }, children: { type: 'array', items: { $ref: '#/$defs/node' } } },
});
const TREE: JsonSchema = {
  type: 'object',
  required: ['root'],
  properties: { root: { $ref: '#/$defs/node' } },
  $defs: { node: { oneOf: [node('group'), node('list')] } },
};

/** `{root: …}` with `depth` nested `list` nodes, each counting its reads of `children`. */
function counted(depth: number): { value: Record<string, unknown>; reads: () => number } {
  let reads = 0;
  let inner: Record<string, unknown> = { kind: 'list' };
  for (let i = 0; i < depth; i++) {
    const children = [inner];
    const outer: Record<string, unknown> = { kind: 'list' };
    Object.defineProperty(outer, 'children', {
      enumerable: true,
      get: () => {
        reads++;
        return children;
      },
    });
    inner = outer;
  }
  return { value: { root: inner }, reads: () => reads };
}

function treeText(depth: number): string {
  let json = '{"kind":"list"}';
  for (let i = 0; i < depth; i++) json = `{"kind":"list","children":[${json}]}`;
  return `{"root":${json}}`;
}

const DEPTH = 18; // main: 1,048,572 reads of 18 nodes

describe('a union of recursive shapes costs time linear in the value', () => {
  // first: the getters of the tests below make the compiled check slower still (main: 20 s at 25 deep after them)
  it('the gate: 778 bytes of arguments, a tree 26 deep, run in well under a second of CPU (main: ~5 s)', async () => {
    const { registry, ran } = registryWith(TREE);
    const args = treeText(26);
    expect(args.length).toBeLessThan(800);
    let result: unknown;
    const ms = await asyncCpuMs(async () => {
      [result] = await registry.executeToolCalls([{ id: 'c1', name: 'pay', arguments: args }]);
    });
    expect(result).toMatchObject({ isError: false });
    expect(ran).toHaveLength(1);
    expect(ms).toBeLessThan(1_000);
  });

  it('a tree 18 deep passes, each node read a bounded number of times (main: 1,048,572 reads)', () => {
    const { value, reads } = counted(DEPTH);
    expect(compileValidator(TREE)(value)).toMatchObject({ ok: true });
    expect(reads()).toBeLessThan(50 * DEPTH);
  });

  it('a node of neither kind is still refused', () => {
    const refused = JSON.parse(treeText(3).replace('"kind":"list"}', '"kind":"other"}')) as Record<string, unknown>;
    expect(compileValidator(TREE)(refused)).toMatchObject({ ok: false });
  });

  it('anyOf of two recursive branches, one failing at each level (96 bytes)', () => {
    const schema: JsonSchema = {
      anyOf: [{ required: ['b'], properties: { a: { $ref: '#' } } }, { properties: { a: { $ref: '#' } } }],
    };
    let reads = 0;
    let value: Record<string, unknown> = {};
    for (let i = 0; i < DEPTH; i++) {
      const inner = value;
      value = {};
      Object.defineProperty(value, 'a', {
        enumerable: true,
        get: () => {
          reads++;
          return inner;
        },
      });
    }
    expect(compileValidator(schema)(value)).toMatchObject({ ok: true });
    expect(reads).toBeLessThan(50 * DEPTH);
  });

  it("an upstream's output schema and its answer: the same", () => {
    const { value, reads } = counted(DEPTH);
    expect(outputSchemaValidator.getValidator(TREE as never)(value).valid).toBe(true);
    expect(reads()).toBeLessThan(50 * DEPTH);
  });
});
