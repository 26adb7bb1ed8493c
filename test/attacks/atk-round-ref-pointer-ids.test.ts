/**
 * Attack (availability, src/schema-pointers.ts `pointerWork`'s URI bounds, 2f55a89..0d91161): the walk counts the
 * `$id`s around each URI only where json-schema-traverse goes, and skips `default`, `enum`, `const` (data). But a
 * `$ref`'s JSON Pointer fragment is resolved by Ajv's `getJsonPointer` (ajv/dist/compile/index.js) through ANY key but
 * `properties`, `patternProperties`, `enum`, `dependencies` and `definitions`, and at every object on its path that
 * has an `$id` it resolves the base again: `baseId = resolveUrl(baseId, $id)`. Under `default`, k objects nested one
 * in the other, each `{ "$id": "a/", "$": … }`, and one `$ref: "#/default/$/$/…/$"` (2k + 9 characters, under the
 * bound of 16,383) have fast-uri resolve k bases of 2, 4, … 2k characters: k² characters. k = 8,000 (145 KB of
 * schema): 6.4 s of Ajv's compilation on main (0d91161), 6.6 s on 0f199a9 (`npx tsx tmp/p1.ts 8000`, scratch). Each
 * spelling of the fragment (one `$` written `%24` at another place: Ajv keys its references by the URI as written)
 * resolves the path again: 3 such `$ref`s at k = 4,000 took 4.5 s (`npx tsx tmp/p2.ts 4000 3`), 1 took 1.5 s; the
 * bound of 2^20 characters of URIs in all admits ~64 of 16 KB, some 400 s of one compilation for a 1.2 MB schema.
 * The schema is an upstream's (an MCP tool's inputSchema), compiled when its tool list is read.
 *
 * Fix: count the `$id`s of every object a `$ref`'s pointer may pass through (walk `default`, `enum`, `const`,
 * `examples` and any unknown keyword's objects for `$id`s as bases too, or follow each local `$ref`'s fragment as
 * getJsonPointer does and add the `$id`s on its path to its URI's length), or refuse an `$id` under data.
 *
 * The same door lets the whole schema of 483af28's attack through its new bound of 2^20 characters of URIs in all:
 * a subschema under `default` is not walked, but a `$ref: "#/default"` compiles it, its `$id` (getJsonPointer) its
 * base, and each of its `$ref`s resolves against that base. `default: { $id: L, allOf: [5,000 × { $ref: "#" }] }`,
 * L of 16,018 characters (registered once, counted once, where the walk sees it: `definitions: { t: { $id: L } }`):
 * 97 KB of schema, 80M characters resolved, 3.2 s of compilation on main, 2.7 s on 0f199a9 (`npx tsx tmp/p5.ts 5000
 * 16000 default`); under `const` alike (1.0 s at 1,000); under an unknown keyword the walk sees it: refused.
 *
 * Counted, not timed: the characters of the bases fast-uri resolves while the schema compiles (its `resolve`
 * wrapped), or the schema refused before Ajv compiles it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { compileValidator } from '../../src/schema.js';
import { ajvFor } from '../../src/schema-dialects.js';
import { URI_CHARACTERS_MAX } from '../../src/schema-pointers.js';

/** `{ properties: { x: { $ref: "#/default/$/…/$" } }, default: { $id: "a/", $: { $id: "a/", $: … } } }`, k levels. */
function pathOfIds(k: number): object {
  let node: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < k; i++) node = { $id: 'a/', $: node };
  return { type: 'object', properties: { x: { $ref: `#/default${'/$'.repeat(k)}` } }, default: node };
}

/** A `$ref` into `default`, whose subschema resolves `n` `$ref`s against an `$id` of 16,018 characters. */
function refsUnderDefault(n: number): object {
  const id = `https://x.example/${'a'.repeat(16_000)}`;
  return {
    type: 'object',
    properties: { x: { $ref: '#/default' } },
    definitions: { t: { $id: id, type: 'string' } },
    default: { $id: id, allOf: Array.from({ length: n }, () => ({ $ref: '#' })) },
  };
}

/** The characters of the bases and references fast-uri resolves while `compile` runs; undefined: it threw. */
function resolvedBy(compile: () => void): number | undefined {
  const resolver = (ajvFor({}).opts as { uriResolver: { resolve: (base: string, path: string) => string } })
    .uriResolver;
  let characters = 0;
  const resolve = resolver.resolve.bind(resolver);
  const spy = vi.spyOn(resolver, 'resolve').mockImplementation((base: string, path: string) => {
    characters += base.length + path.length;
    return resolve(base, path);
  });
  try {
    compile();
    return characters;
  } catch {
    return undefined;
  } finally {
    spy.mockRestore();
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("$ids under default, on a $ref's JSON Pointer", () => {
  it('3,000 levels: refused, or no more base characters resolved than the bound of URIs (main: ~9M, compiles)', () => {
    const schema = pathOfIds(3_000);
    expect(JSON.stringify(schema).length).toBeLessThan(60_000);
    const characters = resolvedBy(() => compileValidator(schema as never));
    // undefined: refused before (or while) compiling.
    if (characters !== undefined) expect(characters).toBeLessThanOrEqual(URI_CHARACTERS_MAX);
  });

  it('1,000 $refs under a 16,018-character $id, inside default: refused, or 2^20 characters resolved at most (main: 16M)', () => {
    const schema = refsUnderDefault(1_000);
    expect(JSON.stringify(schema).length).toBeLessThan(50_000);
    const characters = resolvedBy(() => compileValidator(schema as never));
    if (characters !== undefined) expect(characters).toBeLessThanOrEqual(URI_CHARACTERS_MAX);
  });

  it('an ordinary $ref into definitions still compiles, resolving little', () => {
    const schema = {
      type: 'object',
      properties: { a: { $ref: '#/definitions/s' }, b: { $ref: '#/definitions/s' } },
      definitions: { s: { type: 'string' } },
    };
    const characters = resolvedBy(() => compileValidator(schema as never));
    expect(characters).toBeDefined();
    expect(characters).toBeLessThan(1_000);
  });
});
