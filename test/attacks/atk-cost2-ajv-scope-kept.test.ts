/**
 * Attack (memory past the bound, branch `schemaround` at 3a76d72, src/schema.ts `ajvCompile` / `keepCheck`): the kept
 * checks are bounded (COMPILED_MAX entries, COMPILED_SIZE_MAX characters of text and code), but each Ajv of
 * src/schema-dialects.ts keeps in its own `scope` every value any compilation added to it: each compiled function
 * (`validate`), its schema (`schema`), each pattern's compiled RE2 program (`pattern`), toolgate's enum tables… Nothing
 * takes them out (`removeSchema` does not; eviction from `compiled` does not). So a check the gate dropped — evicted
 * past the bound, or one never kept (a schema that is not plain JSON), or its tool gone — stays in memory for the
 * life of the process: an upstream relisting new schemas grows the process without end, the bound notwithstanding.
 *
 * Shown without a clock: a check compiled for a schema that is not kept is still reachable after a full collection
 * once the caller dropped it (the same check compiled by an Ajv of its own is freed). Mended: an Ajv compiles at most
 * AJV_COMPILATIONS schemas (src/schema-dialects.ts), then a fresh one serves, and the retired one goes with the last
 * of its checks: the checks dropped are freed once AJV_COMPILATIONS more schemas have compiled.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { AJV_COMPILATIONS } from '../../src/schema-dialects.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A schema that is not plain JSON (an `undefined` member): compiled on its own, never kept by the gate. */
function schema(i: number): JsonSchema {
  return {
    type: 'object',
    properties: { a: { type: 'string', minLength: i, pattern: `^(?:x|y)+${i}$` } },
    title: undefined,
  } as JsonSchema;
}

/**
 * How many of `refs` are freed after full collections (up to ten, stopping once all are). One or two may outlive
 * them on a loaded machine (V8's concurrent compiler jobs hold the functions they optimise: CI's Node 20 run once
 * freed 19 of the control's 20), so the tests ask for most, not all; held by the Ajv's scope, none are freed.
 */
async function collected(refs: readonly WeakRef<object>[]): Promise<number> {
  const freed = (): number => refs.filter((ref) => ref.deref() === undefined).length;
  for (let round = 0; round < 10 && freed() < refs.length; round++) {
    await new Promise((resolve) => setTimeout(resolve, round * 10));
    gc();
  }
  return freed();
}

/** Most of twenty: a check held for the life of the process is never freed (0 of 20 before the mend). */
const MOST = 17;

describe('a compiled check the gate no longer holds is freed', () => {
  it('control: the same checks compiled by an Ajv of their own are freed', async () => {
    const refs = Array.from(
      { length: 20 },
      (_, i) => new WeakRef(new Ajv({ allErrors: true, strict: false }).compile(schema(i))),
    );
    expect(await collected(refs)).toBeGreaterThanOrEqual(MOST);
  });

  it('the gate: a check not kept (nor its tool) is freed, not held by the Ajv for the life of the process', async () => {
    const refs = Array.from({ length: 20 }, (_, i) => new WeakRef(compileValidator(schema(1000 + i))));
    // As many schemas again as one Ajv compiles: the Ajv that compiled the twenty is retired by then.
    for (let i = 0; i < AJV_COMPILATIONS; i++) compileValidator(schema(10_000 + i));
    expect(await collected(refs)).toBeGreaterThanOrEqual(MOST);
  });
});
