/**
 * Attack (integrity, low: the public `Tool.validate` of a defined tool, not the gate's own path; branch
 * `schemaround`, src/schema-enum.ts `structureId`): an array is taken for plain data when `Object.keys` lists as
 * many keys as its length. An array with a hole AND an own enumerable key beside its indices has that many, and is
 * read as the array of its keys' values: `[1, <hole>]` with `x: 2` is the member `[1, 2]`, `[<hole>, 5]` with
 * `x: 1` the member `[5, 1]`. Ajv's `equal` (and JSON Schema: a hole is no item) refuses both (mended: an array's
 * index keys must be all of its keys). Left open: a Proxy whose descriptors say one value while its reads (the
 * tool's, Ajv's) give another is read by its descriptors in `Tool.validate` (the read-counting tests of
 * schema-enum.ts go through Proxies; `util.types.isProxy` there would send them to Ajv's `equal`). The gate's
 * `invoke` and `executeToolCalls` snapshot the arguments first (holes become null, extra keys go, reads run once):
 * they refuse, checked below too. Fails on `schemaround` af4cceb.
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import type { ValidationResult } from '../../src/schema.js';
import { ALL_ERRORS_OPTIONS } from './fixtures/allerrors-reference.js';

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

/** An array of `length` with `items` at their indices (the rest holes) and own keys beside them. */
function holed(length: number, items: Record<number, unknown>, extra: Record<string, unknown>): unknown[] {
  const array: unknown[] = [];
  array.length = length;
  for (const [index, item] of Object.entries(items)) array[Number(index)] = item;
  return Object.assign(array, extra);
}

/** Its descriptors say `said`; its reads give `read`. */
function lying(said: Record<string, unknown>, read: Record<string, unknown>): object {
  return new Proxy(
    { ...read },
    {
      getOwnPropertyDescriptor: (target, key) =>
        typeof key === 'string' && Object.hasOwn(said, key)
          ? { value: said[key], writable: true, enumerable: true, configurable: true }
          : Reflect.getOwnPropertyDescriptor(target, key),
    },
  );
}

const cases: [string, Record<string, unknown>, unknown][] = [
  ['[1, <hole>] with x: 2 against [[1, 2]]', { enum: [[1, 2], 'none'] }, holed(2, { 0: 1 }, { x: 2 })],
  ['[<hole>, 5] with x: 1 against const [5, 1]', { const: [5, 1] }, holed(2, { 1: 5 }, { x: 1 })],
  [
    'a Proxy saying {cmd: "ls"}, read as {cmd: "rm -rf /"}',
    { enum: [{ cmd: 'ls' }, 'none'] },
    lying({ cmd: 'ls' }, { cmd: 'rm -rf /' }),
  ],
];

describe('values that are not plain data are not taken for members', () => {
  const reference = new Ajv(ALL_ERRORS_OPTIONS);

  it.each(cases.slice(0, 2))('%s: Tool.validate refuses, as Ajv does', (_label, keyword, value) => {
    const schema = { type: 'object', properties: { v: keyword }, required: ['v'] };
    expect(reference.validate(schema, { v: value })).toBe(false);
    const tool = defineTool({ name: 'pay', parameters: schema, execute: () => 'paid' });
    expect(sync(tool.validate({ v: value })).ok).toBe(false);
  });

  it.each(cases)('%s: invoke refuses (the snapshot: held)', async (_label, keyword, value) => {
    const ran: unknown[] = [];
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'pay',
        parameters: { type: 'object', properties: { v: keyword }, required: ['v'] },
        execute: (args) => (ran.push(args), 'paid'),
      }),
    );
    expect((await registry.invoke('pay', { v: value })).status).toBe('refused');
    expect(ran).toEqual([]);
  });
});
