/**
 * Attack (argument validation, src/schema.ts `ajvFor` / `usesKeyword`): Ajv reads a schema's keywords by name —
 * an inherited getter or a non-enumerable property too — but the walk that picks the dialect went by `for…in`, which
 * sees neither. A `dependentRequired` or `unevaluatedProperties` under such an `allOf` (a schema object built by a
 * class) was not seen: the schema went to the draft-07 Ajv, which ignores them, and `{ card: 1 }` without `cvv` ran;
 * one declaring draft-07 was not refused by name for the keyword it cannot check.
 */
import { describe, it } from 'vitest';
import { neverRuns as neverRunsUnder } from './fixtures/schema-tool.js';

function neverRuns(schema: Record<string, unknown>, args: Record<string, unknown>): Promise<void> {
  return neverRunsUnder(schema, args, /means nothing/);
}

class CardSchema {
  readonly type = 'object';
  get properties(): Record<string, unknown> {
    return { card: {}, cvv: {} };
  }
  get allOf(): unknown[] {
    return [{ dependentRequired: { card: ['cvv'] } }];
  }
}

class StrictSchema {
  readonly type = 'object';
  get allOf(): unknown[] {
    return [{ properties: { to: {} }, unevaluatedProperties: false }];
  }
}

class Draft07CardSchema extends CardSchema {
  get $schema(): string {
    return 'http://json-schema.org/draft-07/schema#';
  }
}

describe('a 2019-09 / 2020-12 keyword where for…in does not look', () => {
  it('under an allOf getter of a class: dependentRequired is checked', async () => {
    await neverRuns(new CardSchema() as unknown as Record<string, unknown>, { card: 1 });
  });

  it('under an allOf getter of a class: unevaluatedProperties is checked', async () => {
    await neverRuns(new StrictSchema() as unknown as Record<string, unknown>, { to: 1, admin: true });
  });

  it('under a non-enumerable properties: prefixItems is checked', async () => {
    const schema: Record<string, unknown> = { type: 'object' };
    Object.defineProperty(schema, 'properties', {
      value: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }] } },
      enumerable: false,
    });
    await neverRuns(schema, { pair: [1, 'a'] });
  });

  it('declared draft-07 (an inherited $schema getter): refused by name, not ignored', async () => {
    await neverRuns(new Draft07CardSchema() as unknown as Record<string, unknown>, { card: 1 });
  });
});
