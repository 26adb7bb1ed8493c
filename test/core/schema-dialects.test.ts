/**
 * A JSON Schema that declares its dialect (`$schema`) is read in it (src/schema.ts `ajvFor`). A 2020-12 schema —
 * what zod 4's `z.toJSONSchema` writes by default, and OpenAPI 3.1 — did not compile at all ("no schema with key
 * or ref"): the tool could not be registered. A dialect toolgate does not read, or a keyword of a later dialect
 * that the declared one would ignore, does not compile: never half read. And `format` is checked (ajv-formats): it was
 * ignored, so a tool whose schema says `format: "uuid"` ran with any string.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/index.js';
import { SCHEMA_DEPTH_MAX } from '../../src/schema-dialects.js';
import { runsWith } from '../attacks/fixtures/schema-tool.js';

const D07 = 'http://json-schema.org/draft-07/schema#';
const D2019 = 'https://json-schema.org/draft/2019-09/schema';
const D2020 = 'https://json-schema.org/draft/2020-12/schema';

/** zod 4's JSON Schema as JSON text gives it (a file, a database, the wire): zod's own validator, a hidden `~standard`, left behind. */
function jsonOf(schema: z.ZodType): Record<string, unknown> {
  return JSON.parse(JSON.stringify(z.toJSONSchema(schema))) as Record<string, unknown>;
}

const runs = runsWith;

describe('a schema declaring its dialect', () => {
  it("reads zod 4's toJSONSchema output as JSON text (2020-12): refuses what the zod schema refuses", async () => {
    const schema = jsonOf(
      z.strictObject({
        to: z.string().min(3),
        amount: z.number().int().positive(),
        email: z.string().max(40),
        tags: z.tuple([z.string(), z.number()]),
      }),
    );
    expect(schema['$schema']).toBe(D2020);
    const ok = { to: 'alice', amount: 5, email: 'a@b.c', tags: ['a', 1] };
    expect(await runs(schema, ok)).toBe(true);
    expect(await runs(schema, { ...ok, to: 'al' })).toBe(false);
    expect(await runs(schema, { ...ok, amount: -1 })).toBe(false);
    expect(await runs(schema, { ...ok, email: 'x'.repeat(41) })).toBe(false);
    expect(await runs(schema, { ...ok, tags: [1, 'a'] })).toBe(false);
    expect(await runs(schema, { ...ok, admin: true })).toBe(false);
  });

  it('reads a 2020-12 schema that uses no keyword draft-07 lacks (the draft-07 Ajv could not compile it)', async () => {
    const schema = jsonOf(z.strictObject({ to: z.string().min(3), amount: z.number().max(100) }));
    expect(await runs(schema, { to: 'alice', amount: 5 })).toBe(true);
    expect(await runs(schema, { to: 'alice', amount: 500 })).toBe(false);
    expect(await runs(schema, { to: 'alice', amount: 5, admin: true })).toBe(false);
  });

  it('reads 2019-09: its tuple items, dependentRequired and unevaluatedProperties are enforced', async () => {
    const schema = {
      $schema: D2019,
      type: 'object',
      properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }] }, card: {} },
      dependentRequired: { card: ['cvv'] },
      allOf: [{ properties: { cvv: {} } }],
      unevaluatedProperties: false,
    };
    expect(await runs(schema, { pair: ['a', 1], card: 1, cvv: 2 })).toBe(true);
    expect(await runs(schema, { pair: [1, 'a'] })).toBe(false);
    expect(await runs(schema, { card: 1 })).toBe(false);
    expect(await runs(schema, { admin: true })).toBe(false);
  });

  it('reads draft-07 as before (tuple items), with or without the trailing #, by http:// or https://', async () => {
    for (const $schema of [
      D07,
      D07.slice(0, -1),
      D07.replace('http:', 'https:'),
      D07.replace('http:', 'https:').slice(0, -1),
    ]) {
      const schema = { $schema, type: 'object', properties: { pair: { items: [{ type: 'string' }] } } };
      expect(await runs(schema, { pair: ['a'] })).toBe(true);
      expect(await runs(schema, { pair: [1] })).toBe(false);
    }
  });

  it.each([
    ['draft-07', 'prefixItems', D07, { properties: { a: { prefixItems: [{ type: 'string' }] } } }],
    ['draft-07', 'dependentRequired', D07, { dependentRequired: { card: ['cvv'] } }],
    ['draft-07', 'unevaluatedProperties', D07, { allOf: [{ unevaluatedProperties: false }] }],
    ['2019-09', 'prefixItems', D2019, { properties: { a: { prefixItems: [{ type: 'string' }] } } }],
  ])('refuses to compile a %s schema using %s, a keyword its dialect ignores', (dialect, keyword, $schema, rest) => {
    expect(() =>
      defineTool({ name: 'pay', parameters: { $schema, type: 'object', ...rest }, execute: () => 'paid' }),
    ).toThrow(new RegExp(`declares ${dialect}, where ${keyword} means nothing`));
  });

  it.each([
    ['draft-04', 'http://json-schema.org/draft-04/schema#'],
    ['draft-06', 'http://json-schema.org/draft-06/schema#'],
    ['a custom meta-schema', 'https://example.com/my-meta'],
    ['a number', 7],
  ])('refuses to compile a schema declaring %s', (_label, $schema) => {
    expect(() => defineTool({ name: 'pay', parameters: { $schema, type: 'object' }, execute: () => 'paid' })).toThrow(
      /\$schema .* is not a dialect toolgate reads/,
    );
  });
});

describe('formats', () => {
  const schema = (format: string) => ({ type: 'object', properties: { v: { type: 'string', format } } });

  it.each([
    ['uuid', 'nope; drop table', '123e4567-e89b-12d3-a456-426614174000'],
    ['email', 'not-an-address', 'a@example.com'],
    ['uri', 'example.com/no-scheme', 'https://example.com/x'],
    ['date-time', '2026-13-40', '2026-12-05T13:37:00Z'],
    ['ipv4', '999.1.1.1', '10.0.0.1'],
  ])('%s is checked: %j refused, %j runs', async (format, bad, good) => {
    for (const dialect of [undefined, D2020, D2019, D07]) {
      const s = dialect === undefined ? schema(format) : { $schema: dialect, ...schema(format) };
      expect(await runs(s, { v: bad })).toBe(false);
      expect(await runs(s, { v: good })).toBe(true);
    }
  });

  it("url is checked in linear time (ajv-formats' own regular expression took the square of the length)", async () => {
    expect(await runs(schema('url'), { v: 'https://example.com/a?b=c' })).toBe(true);
    expect(await runs(schema('url'), { v: 'example.com' })).toBe(false);
    expect(await runs(schema('url'), { v: 'https://exa mple.com' })).toBe(false);
    // A million characters: ~55 s with the quadratic expression, milliseconds now (the test's timeout is 5 s).
    expect(await runs(schema('url'), { v: 'http://'.repeat(150_000) + '@ ' })).toBe(false);
  });

  it('a format Ajv does not know (a UI hint) is ignored, as before', async () => {
    expect(await runs(schema('textarea'), { v: 'anything' })).toBe(true);
  });
});

describe('nesting', () => {
  /** `levels` objects nested by `properties: { a: … }` around a string. */
  const nested = (levels: number): Record<string, unknown> => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { a: schema } };
    return schema;
  };
  const tool = (parameters: Record<string, unknown>) => defineTool({ name: 'deep', parameters, execute: () => 'ran' });

  it('past SCHEMA_DEPTH_MAX (64) levels is refused as nested too deep (it was "formatMinimum is not read")', () => {
    expect(SCHEMA_DEPTH_MAX).toBe(64);
    expect(() => tool(nested(64))).not.toThrow();
    for (const parameters of [nested(65), nested(200), { type: 'object', allOf: [nested(70)] }]) {
      expect(() => tool(parameters)).toThrow(
        /the schema nests past 64 levels of subschemas and arrays \(SCHEMA_DEPTH_MAX\)/,
      );
      expect(() => tool(parameters)).not.toThrow(/formatMinimum/);
    }
  });

  it('a cyclic schema is refused by the same name', () => {
    const cyclic: Record<string, unknown> = { type: 'object', properties: {} };
    (cyclic['properties'] as Record<string, unknown>)['self'] = cyclic;
    expect(() => tool(cyclic)).toThrow(/nests past 64 levels .*, or holds a cycle/);
  });
});
