/**
 * Attack (fail-open, src/schema.ts's compiled validators kept by schema text): the key is the schema's JSON text when it
 * is compiled, but the check kept under it is Ajv's compilation of the object itself, and both may tell another story
 * afterwards:
 *
 * - Ajv's code reads some keywords from the schema object at every check, not from the text: `required` of 200 names
 *   or more (a loop over the array), `additionalProperties: false` beside more than 8 `properties` (an own-property
 *   test of the `properties` object). A tool author (one tenant of a process: every registry shares the cache) whose
 *   schema object changes after its tool is defined — a template edited for the next tool, or on purpose — changes the
 *   check kept under the old text. Any later tool declaring that old text, in any registry, gets it: its required
 *   names are not required, an extra property passes its closed object.
 * - A schema object whose reads change (a Proxy: every descriptor plain data, so src/schema.ts's `plainJson` takes it)
 *   is keyed by what JSON.stringify read and compiled by what Ajv read next: a lax check kept under a strict text.
 *
 * The victim's schema is plain JSON, compiled after the other's: its arguments the text refuses pass. Fails on
 * `schemaround` (af4cceb) and on main; passes once the check kept for a text is compiled from that text (a copy, e.g.
 * `JSON.parse(key)`), not from the caller's object.
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema } from '../../src/schema.js';

const plain = (schema: JsonSchema): JsonSchema => JSON.parse(JSON.stringify(schema)) as JsonSchema;

describe("a kept check is another schema object's", () => {
  it('additionalProperties: false beside 9 properties: a property added to the first object opens the second', async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 9; i++) properties[`field${i}`] = { type: 'string' };
    const template: Record<string, unknown> = { type: 'object', properties, additionalProperties: false, title: 'x1' };
    const victim = plain(template);
    compileValidator(template); // tenant A's tool
    properties['command'] = { type: 'string' }; // A's object edited afterwards (for its next tool, or on purpose)
    const check = compileValidator(victim); // tenant B's tool: the text it declares refuses `command`
    expect(await check({ field0: 'a', command: 'rm -rf /' })).toMatchObject({ ok: false });
  });

  it('required of 200 names: names dropped from the first object are not required by the second', async () => {
    const required = Array.from({ length: 200 }, (_, i) => `name${i}`);
    const template: Record<string, unknown> = { type: 'object', required, title: 'x2' };
    const victim = plain(template);
    compileValidator(template);
    required.length = 0;
    const check = compileValidator(victim);
    expect(await check({})).toMatchObject({ ok: false });
  });

  it('a schema read one way by JSON.stringify and another by Ajv: the lax check is kept under the strict text', async () => {
    const strict: JsonSchema = {
      type: 'object',
      properties: { amount: { type: 'number', maximum: 100 } },
      required: ['amount'],
      title: 'x3',
    };
    let reads = 0;
    const amount = new Proxy(
      { type: 'number', maximum: 100 },
      {
        get(target, key, receiver) {
          if (key === 'maximum' && ++reads > 1) return 1e308; // the first read is JSON.stringify's
          return Reflect.get(target, key, receiver) as unknown;
        },
      },
    );
    compileValidator({ ...strict, properties: { amount } });
    const check = compileValidator(plain(strict));
    expect(await check({ amount: 1_000_000 })).toMatchObject({ ok: false });
  });
});
