/**
 * Attack (branch `ajvgen` at 2e66949, src/schema-dialects.ts `serving` / src/schema.ts `ajvCompile`): each dialect's
 * Ajv is handed AJV_COMPILATIONS compilations, then a fresh one serves. A fresh Ajv compiles its meta-schema inside
 * the first schema's compilation, under that schema's `newCheck`: the meta-schema's code (24,282 characters for
 * draft-07, 58,312 for 2020-12, 54,755 for 2019-09) is counted against that schema's SCHEMA_CODE_MAX. So a schema
 * that compiles on a long-lived Ajv is refused when it is the first of a fresh one — every 1,000th compilation of
 * the process: whether a tool registers depends on how many schemas compiled before it (fail closed, but not the
 * same decision for the same schema). Its kept size (keepCheck) is inflated by the meta-schema's code too.
 *
 * Mended: a fresh Ajv compiles its meta-schema when it is made, its code counted alone.
 *
 * Left (atk-ajvgen's second finding): a refused schema is never kept (each presentation compiles again) and takes one
 * of the Ajv's compilations, so the same refused schema presented AJV_COMPILATIONS times (~40 µs each) retires the Ajv
 * (~20–50 ms for a fresh one): about twice the cost of such a stream. Counted on purpose: a compilation that fails
 * may have added to the Ajv's scope.
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { codeWritten, SCHEMA_CODE_MAX } from '../../src/schema-bounds.js';
import { AJV_COMPILATIONS, ajvFor } from '../../src/schema-dialects.js';

/** Hands out the draft-07 Ajv until a fresh one serves (each hand-out counts, as a compilation's does). */
function untilFresh(): void {
  const probe: JsonSchema = { type: 'object' };
  const first = ajvFor(probe);
  for (let i = 0; i <= AJV_COMPILATIONS; i++) if (ajvFor(probe) !== first) return;
  throw new Error('no fresh Ajv');
}

/** `n` properties of fixed-width names: the code written grows by the same count per property. */
function wide(n: number, tag: number): JsonSchema {
  const properties = Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`p${String(i).padStart(5, '0')}`, { type: 'string', minLength: 1 }]),
  );
  return { type: 'object', minProperties: tag, properties };
}

describe('a schema is decided alike by a fresh Ajv and by a long-lived one', () => {
  it('a schema that compiles on a long-lived Ajv compiles as the first of a fresh one', () => {
    untilFresh();
    // A schema whose code ends within 20,000 characters below the bound (Ajv's names grow: found by steps).
    compileValidator(wide(4000, 101));
    const at4000 = codeWritten();
    compileValidator(wide(5000, 102));
    const at5000 = codeWritten();
    let n = 5000 + Math.floor((SCHEMA_CODE_MAX - 8_000 - at5000) / ((at5000 - at4000) / 1000));
    let code = Infinity;
    for (let tag = 110; code > SCHEMA_CODE_MAX && tag < 150; tag++, n -= 5) {
      try {
        compileValidator(wide(n, tag)); // on the long-lived Ajv: compiles
        code = codeWritten();
      } catch {
        code = Infinity;
      }
    }
    expect(code).toBeGreaterThan(SCHEMA_CODE_MAX - 20_000);
    expect(code).toBeLessThanOrEqual(SCHEMA_CODE_MAX);
    // The next schema is the first a fresh Ajv compiles.
    untilFresh();
    // 2e66949: "the schema compiles to more than 4,000,000 characters of code": the meta-schema's counted
    expect(() => compileValidator(wide(n + 5, 200))).not.toThrow();
  }, 60_000);
});
