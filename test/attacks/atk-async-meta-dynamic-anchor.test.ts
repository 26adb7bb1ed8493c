/**
 * Attack (HIGH: a refused value passes, and an unhandled rejection, which ends a Node process by default; src/schema.ts
 * `ajvCompile`): an `$async` schema with a `$dynamicRef` does not compile — Ajv calls a dynamic reference's target,
 * the root, as a synchronous check even when it is `$async`, and reads its promise as valid. The guard looks for
 * `$dynamicRef` / `$recursiveRef` in the schema only; the meta-schemas a schema may `$ref` hold them (2020-12's
 * `$dynamicRef: "#meta"` at each of its subschema places, 2019-09's `$recursiveRef: "#"`). An `$async` root declaring
 * `$dynamicAnchor: "meta"` (or `$recursiveAnchor: true`) and checking a property against the meta-schema: the
 * meta-schema's dynamic references resolve to the root (as the spec says: the outermost anchor), which Ajv calls
 * synchronously. Every nested value there passes, whatever the root refuses, and each one the root refuses leaves a
 * rejected promise nobody awaits.
 *
 * Figures (`nice npx tsx`, main ed1c1df): `{amount: 1, s: {$defs: {x: {amount: 1000}}}}` passed where the root
 * refuses `amount` past 100 (the same schema without `$async` refuses it), and Node 20 exited with code 1 on the
 * unhandled ValidationError: one call of a tool whose schema an upstream wrote ends the gateway's process.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileValidator } from '../../src/schema.js';
import { registryWith } from './fixtures/schema-tool.js';

const META_2020 = 'https://json-schema.org/draft/2020-12/schema';
const META_2019 = 'https://json-schema.org/draft/2019-09/schema';

/** A root refusing `amount` past 100, its property `s` checked against `meta` (whose dynamic references find the root). */
function withMeta(anchor: Record<string, unknown>, meta: string): Record<string, unknown> {
  return {
    $schema: meta,
    ...anchor,
    type: 'object',
    required: ['amount'],
    properties: { amount: { type: 'integer', maximum: 100 }, s: { $ref: meta } },
  };
}

const SHAPES = [
  ['2020-12, $dynamicAnchor: "meta"', withMeta({ $dynamicAnchor: 'meta' }, META_2020)],
  ['2019-09, $recursiveAnchor: true', withMeta({ $recursiveAnchor: true }, META_2019)],
] as const;

/** Rejections no one handled while a test ran. */
let unhandled: unknown[] = [];
const record = (reason: unknown): void => void unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on('unhandledRejection', record);
});
afterEach(() => {
  process.off('unhandledRejection', record);
});

/** Lets every rejection made so far be reported. */
const settled = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

describe('an $async root whose anchor a meta-schema’s dynamic reference finds', () => {
  for (const [name, schema] of SHAPES) {
    it(`${name}: synchronously, the root refuses the nested value`, () => {
      const sync = compileValidator(schema);
      expect(sync({ amount: 1, s: { $defs: { x: { amount: 1000 } } } })).toMatchObject({ ok: false });
    });

    it(`${name}, $async: not compiled, or the nested value refused and no rejection left unhandled (main: passed, one unhandled)`, async () => {
      let registered: ReturnType<typeof registryWith> | undefined;
      try {
        registered = registryWith({ ...schema, $async: true });
      } catch (error) {
        expect(String(error)).toMatch(/not supported in a schema with \$async/);
      }
      if (registered !== undefined) {
        const result = await registered.registry.invoke('pay', { amount: 1, s: { $defs: { x: { amount: 1000 } } } });
        expect(result.status).toBe('refused');
        expect(registered.ran).toEqual([]);
      }
      await settled();
      expect(unhandled).toEqual([]);
    });
  }
});
