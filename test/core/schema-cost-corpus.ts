/**
 * Schemas to compare src/schema-cost.ts's lower bound with the code Ajv writes (test/core/schema-cost.test.ts): the
 * repository's own JSON Schemas, real ones from the dev dependencies (vega and vega-lite's definitions, Ajv's
 * `json-schema-secure`), zod 4's `toJSONSchema` of assorted schemas, and seeded random schemas.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { prng } from '../../bench/scenario.js';
import type { JsonSchema } from '../../src/schema.js';

/** A JSON file of the repository (its node_modules too). */
const json = (path: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')) as Record<string, unknown>;

/** Each definition of a schema with `definitions` as a root of its own (the definitions kept for its references). */
function definitionsOf(schema: Record<string, unknown>, every: number): JsonSchema[] {
  const definitions = schema['definitions'] as Record<string, Record<string, unknown>>;
  return Object.keys(definitions)
    .filter((_, i) => i % every === 0)
    .map((name) => ({ ...definitions[name], definitions }));
}

/** Real schemas: the repository's, vega's and vega-lite's definitions (one in `every`), Ajv's secure meta-schema. */
export function realSchemas(every: number): [string, JsonSchema][] {
  const out: [string, JsonSchema][] = [];
  const policy = json('schema/policy.schema.json');
  out.push(['schema/policy.schema.json', policy]);
  const secure = json('node_modules/ajv/dist/refs/json-schema-secure.json');
  delete secure['$id'];
  delete secure['$schema'];
  out.push(['ajv json-schema-secure', secure]);
  for (const [name, path] of [
    ['vega', 'node_modules/vega/build/vega-schema.json'],
    ['vega-lite', 'node_modules/vega-lite/build/vega-lite-schema.json'],
  ] as const) {
    const schema = json(path);
    delete schema['$schema'];
    definitionsOf(schema, every).forEach((s, i) => out.push([`${name} #${i}`, s]));
  }
  return out;
}

/** zod 4's `toJSONSchema` (2020-12) of assorted schemas, as JSON text reads it. */
export function zodSchemas(): [string, JsonSchema][] {
  const Node: z.ZodType = z.lazy(() => z.object({ name: z.string(), children: z.array(Node) }));
  const schemas: Record<string, z.ZodType> = {
    object: z.object({ a: z.string().min(1).max(20), b: z.number().int().min(0), c: z.boolean().optional() }),
    formats: z.object({ id: z.uuid(), mail: z.email(), at: z.iso.datetime(), url: z.url(), ip: z.ipv4() }),
    enums: z.object({ kind: z.enum(['a', 'b', 'c']), lit: z.literal('x'), n: z.literal(3) }),
    union: z.union([z.string(), z.number(), z.object({ x: z.string() })]),
    discriminated: z.discriminatedUnion('type', [
      z.object({ type: z.literal('a'), a: z.string() }),
      z.object({ type: z.literal('b'), b: z.number().positive() }),
      z.object({ type: z.literal('c'), c: z.array(z.string()).min(1) }),
    ]),
    recursive: z.object({ root: Node }),
    record: z.object({ tags: z.record(z.string(), z.string().max(8)), m: z.record(z.enum(['x', 'y']), z.number()) }),
    tuple: z.object({ t: z.tuple([z.string(), z.number()]), rest: z.tuple([z.string()], z.number()) }),
    intersection: z.object({ i: z.intersection(z.object({ a: z.string() }), z.object({ b: z.number() })) }),
    nullable: z.object({ n: z.string().nullable(), o: z.number().optional().nullable(), d: z.string().default('x') }),
    strict: z.strictObject({ a: z.string(), nested: z.strictObject({ b: z.string().regex(/^[a-z]+$/) }) }),
    arrays: z.object({ xs: z.array(z.number().multipleOf(5)).max(10), set: z.array(z.string()).nonempty() }),
    deep: z.object({ a: z.object({ b: z.object({ c: z.object({ d: z.object({ e: z.string().length(3) }) }) }) }) }),
    wide: z.object(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`field_${i}`, z.string().min(i)]))),
  };
  return Object.entries(schemas).map(([name, schema]) => [
    `zod ${name}`,
    JSON.parse(JSON.stringify(z.toJSONSchema(schema))) as JsonSchema,
  ]);
}

const KEYS = [
  'a',
  'b',
  'name',
  '~1',
  '~0',
  'a/b',
  'x~y',
  '"q"',
  "it's",
  'é',
  '日本',
  '😀',
  '%24',
  '$x',
  '',
  ' sp',
  '#',
];

/** `count` random schemas from `seed`: nested keywords, `$defs` and `$ref`s (spelled several ways), odd keys. */
export function randomSchemas(seed: number, count: number): [string, JsonSchema][] {
  const random = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const out: [string, JsonSchema][] = [];
  for (let n = 0; n < count; n++) {
    const defs = 1 + Math.floor(random() * 3);
    const modern = random() < 0.4;
    const pointers: string[] = [];
    const key = (): string => (random() < 0.1 ? 'k'.repeat(1 + Math.floor(random() * 300)) : pick(KEYS));
    const ref = (): string => {
      const r = random();
      if (r < 0.1) return '#';
      if (r < 0.4 && pointers.length > 0) return pick(pointers);
      const d = `d${Math.floor(random() * defs)}`;
      return random() < 0.5 ? `#/$defs/${d}` : `#/%24defs/${d}`;
    };
    const node = (depth: number, pointer: string | undefined): unknown => {
      if (pointer !== undefined) pointers.push(pointer);
      const r = random();
      if (depth > 5 || r < 0.25) return leaf();
      const at = (suffix: string): string | undefined => (pointer === undefined ? undefined : `${pointer}/${suffix}`);
      if (r < 0.5) {
        const properties: Record<string, unknown> = {};
        const width = 1 + Math.floor(random() * 4);
        for (let i = 0; i < width; i++) {
          const k = key();
          const escaped = k.replace(/~/g, '~0').replace(/\//g, '~1');
          properties[k] = node(depth + 1, at(`properties/${random() < 0.5 ? encodeURIComponent(escaped) : escaped}`));
        }
        const s: Record<string, unknown> = { type: 'object', properties };
        if (random() < 0.5) s['required'] = Object.keys(properties).slice(0, 2);
        if (random() < 0.3) s['additionalProperties'] = pick([false, true, { type: 'number' }, {}]);
        if (random() < 0.1) s['$id'] = `http://example.com/${n}/${pointers.length}`;
        if (random() < 0.15) s['patternProperties'] = { '^a': node(depth + 1, undefined), 'b+': leaf() };
        if (random() < 0.1) s['dependencies'] = { a: node(depth + 1, undefined), b: ['a'] };
        if (modern && random() < 0.1) s['dependentSchemas'] = { [key()]: node(depth + 1, undefined) };
        if (random() < 0.1) s['propertyNames'] = pick([leaf(), { maxLength: 3 }, {}]);
        return s;
      }
      if (r < 0.55)
        return { type: 'array', items: node(depth + 1, at('items')), minItems: 1, uniqueItems: random() < 0.3 };
      if (r < 0.6) {
        const tuple = [node(depth + 1, undefined), node(depth + 1, undefined)];
        return modern ? { prefixItems: tuple, items: pick([false, leaf()]) } : { items: tuple, additionalItems: false };
      }
      if (r < 0.8) {
        const branches = Array.from({ length: 1 + Math.floor(random() * 3) }, () =>
          random() < 0.1 ? pick([{}, true, { description: 'x' }]) : node(depth + 1, undefined),
        );
        return { [pick(['anyOf', 'oneOf', 'allOf'])]: branches };
      }
      if (r < 0.85) return { not: node(depth + 1, undefined) };
      if (r < 0.9) {
        const clauses: Record<string, unknown> = { then: node(depth + 1, undefined), else: node(depth + 1, undefined) };
        if (random() < 0.3) delete clauses[pick(['then', 'else'])];
        return { if: pick([leaf(), true, {}, node(depth + 1, undefined)]), ...clauses };
      }
      return { $ref: ref(), ...(random() < 0.3 ? { description: 'sibling', type: 'object' } : {}) };
    };
    const leaf = (): Record<string, unknown> => {
      const s: Record<string, unknown> = {};
      const type = pick(['string', 'number', 'integer', 'boolean', 'null', 'array', 'object', ['string', 'null']]);
      if (random() < 0.8) s['type'] = type;
      if (random() < 0.3) s['minLength'] = 1;
      if (random() < 0.2) s['maxLength'] = 30;
      if (random() < 0.2) s['minimum'] = 0;
      if (random() < 0.1) s['exclusiveMaximum'] = 100;
      if (random() < 0.1) s['multipleOf'] = 2;
      if (random() < 0.15) s['pattern'] = '^[a-z]+$';
      if (random() < 0.15) s['enum'] = ['x', 'y', 1, null];
      if (random() < 0.1) s['const'] = pick(['c', 1, { o: [1] }]);
      if (random() < 0.1) s['format'] = pick(['email', 'uuid', 'textarea']);
      if (random() < 0.1) s['required'] = [...new Set([key(), key()])];
      if (random() < 0.1) s['maxProperties'] = 3;
      if (random() < 0.1) s['uniqueItems'] = true;
      if (random() < 0.1) s['title'] = 'annotation';
      return s;
    };
    const $defs: Record<string, unknown> = {};
    for (let d = 0; d < defs; d++) $defs[`d${d}`] = node(1, `#/$defs/d${d}`);
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 1 + Math.floor(random() * 4); i++) properties[`p${i}`] = node(1, `#/properties/p${i}`);
    properties['refs'] = { type: 'object', properties: { r0: { $ref: ref() }, r1: { $ref: ref() } } };
    const schema: Record<string, unknown> = { type: 'object', properties, $defs };
    if (modern) schema['$schema'] = 'https://json-schema.org/draft/2020-12/schema';
    out.push([`random ${seed}/${n}`, JSON.parse(JSON.stringify(schema)) as JsonSchema]);
  }
  return out;
}

const MODERN = 'https://json-schema.org/draft/2020-12/schema';

/** Hand-made edge cases of Ajv's code: always-valid branches, `not` inside `not`, long `required`, odd keys. */
export function edgeSchemas(): [string, JsonSchema][] {
  const schemas: unknown[] = [
    { not: { not: {}, type: 'string', minLength: 1 } },
    { not: { not: true, properties: { a: { type: 'string' } } } },
    { if: { not: {}, required: ['a', 'b'] }, then: { type: 'object' } },
    { if: { required: ['a', 'b'], properties: { a: { minLength: 1 } } }, else: { type: 'object' } },
    { not: { required: ['a', 'b', 'c'] } },
    { anyOf: [{}, { type: 'string' }] },
    { anyOf: [true, { minLength: 1 }] },
    { $schema: MODERN, anyOf: [{}, { type: 'string', minLength: 1 }] },
    { $schema: MODERN, anyOf: [{ title: 'x' }, { type: 'string', minLength: 1 }] },
    { required: Array.from({ length: 250 }, (_, i) => `r${i}`) },
    { required: Array.from({ length: 199 }, (_, i) => `r${i}`) },
    JSON.parse('{"properties": {"__proto__": {"type": "string", "minLength": 1}, "b": {"type": "string"}}}'),
    { $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { type: 'string' } } },
    { $ref: '#/$defs/a', $defs: { a: { $ref: '#' } }, type: 'object' },
    { $id: 'http://example.com/s', $ref: '#/$defs/a', $defs: { a: { type: 'string' } } },
    { $id: 'http://example.com/s', properties: { a: { $ref: '#/properties/b' }, b: { type: 'string' } } },
    { properties: { a: false, b: true, c: {} } },
    { type: ['string', 'number'], minLength: 1, minimum: 1 },
    { type: 'integer', minimum: 0 },
    { nullable: true, type: 'string', minLength: 1 },
    { const: null },
    { enum: [null] },
    { additionalProperties: { type: 'string' }, properties: { a: { type: 'number' } } },
    { propertyNames: { maxLength: 2 } },
    { $schema: MODERN, contains: { type: 'string' }, minContains: 0 },
    { $schema: MODERN, not: { contains: { type: 'string' }, minContains: 2, maxContains: 1, minLength: 1 } },
    { if: { type: 'string' }, then: { minLength: 1 } },
    { then: { minLength: 1 }, else: { maxLength: 1 } },
    { items: [{ type: 'string' }], additionalItems: { type: 'number' } },
    { dependencies: { a: ['b'], c: { required: ['d'] } } },
    { patternProperties: { '^a': {}, '^b': { type: 'string' } } },
    { $schema: MODERN, prefixItems: [{ type: 'string' }, true], items: false },
    { $schema: MODERN, dependentSchemas: { a: { required: ['b'] } }, dependentRequired: { c: ['d'] } },
    { allOf: [{ $ref: '#/allOf/1' }, { type: 'object', properties: { x: { $ref: '#/allOf/1' } } }] },
    { properties: { 'a/b': { $ref: '#/properties/a~1b/properties/c' }, c: {} } },
  ];
  return schemas.map((schema, i) => [`edge ${i}`, schema as JsonSchema]);
}
