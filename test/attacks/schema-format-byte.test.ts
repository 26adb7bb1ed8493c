/**
 * Attack (argument validation, src/schema.ts `withFormats`): ajv-formats' `byte` (base64, OpenAPI's `format: byte`)
 * is a regular expression with the flags `gm`: in multiline mode `^` and `$` match at every line, so a string is
 * "base64" when any one of its lines is, and an empty line is. A tool whose schema says `format: "byte"` ran with
 * `"$(rm -rf /)\n"` or `"not base64\nAAAA"`. The check is now of the whole string.
 */
import { describe, expect, it } from 'vitest';
import { runsWith } from './fixtures/schema-tool.js';

const D2020 = 'https://json-schema.org/draft/2020-12/schema';
const D2019 = 'https://json-schema.org/draft/2019-09/schema';
const schema = { type: 'object', properties: { blob: { type: 'string', format: 'byte' } } };

function runs(s: Record<string, unknown>, blob: string): Promise<boolean> {
  return runsWith(s, { blob });
}

describe('format byte', () => {
  it.each([
    ['a trailing newline', '$(rm -rf /)\n'],
    ['a base64 line after another', 'not base64!\nAAAA'],
    ['a base64 line before another', 'AAAA\nnot base64!'],
    ['an empty line', 'x\n\ny'],
    ['a carriage return and newline', '%%%\r\n'],
  ])('%s is not base64: refused (every dialect)', async (_label, blob) => {
    for (const s of [schema, { $schema: D2020, ...schema }, { $schema: D2019, ...schema }])
      expect(await runs(s, blob)).toBe(false);
  });

  it('base64 still runs (padding, empty string), and a long string is checked in linear time', async () => {
    for (const blob of ['', 'AAAA', 'aGVsbG8=', 'aGk=', 'A+/z'.repeat(4)]) expect(await runs(schema, blob)).toBe(true);
    for (const blob of ['AAA', 'A===', 'AA=A', 'AAAA\n']) expect(await runs(schema, blob)).toBe(false);
    expect(await runs(schema, 'AAAA'.repeat(500_000) + '!')).toBe(false);
    expect(await runs(schema, 'AAAA'.repeat(500_000))).toBe(true);
  });
});
