// Strict JSON for .json policy files: JSON.parse's verdict, with the place where the text stops being JSON.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonSyntaxError, lineColumn } from '../../src/policy-file/json-syntax.js';
import { fcParams } from '../reliability/size.js';

const where = (text: string): string | null => {
  const e = jsonSyntaxError(text);
  if (!e) return null;
  const { line, column } = lineColumn(text, e.offset);
  return `${line}:${column} ${e.message}`;
};

describe('jsonSyntaxError', () => {
  it('places each kind of error', () => {
    expect(where('{"a":1,}')).toBe('1:7 a trailing comma before "}" (JSON allows none)');
    expect(where('[1,\n]')).toBe('1:3 a trailing comma before "]" (JSON allows none)');
    expect(where('{"a":}')).toBe('1:6 expected a value, found "}"');
    expect(where("{'a':1}")).toBe('1:2 expected a double-quoted property name, found "\'"');
    expect(where('{"a" 1}')).toBe('1:6 expected ":" after the property name, found "1"');
    expect(where('{"a":1} // c')).toBe('1:9 unexpected "/" after the JSON value');
    expect(where('{"a":"x\ty"}')).toMatch(/^1:8 a control character/);
    expect(where('{"a":"\\x"}')).toMatch(/^1:7 invalid escape/);
    expect(where('"abc')).toBe('1:1 a string that never ends');
    expect(where('  ')).toMatch(/the file is empty/);
    expect(where('{\n  "a": 01\n}')).toBe('2:9 a malformed number');
    expect(where('\uFEFF{"a":1}')).toBeNull();
    expect(where('['.repeat(100_000) + ']'.repeat(100_000))).toBeNull(); // no recursion
  });

  it('agrees with JSON.parse on valid JSON and on every one-character edit of it', () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.nat(),
        fc.constantFrom(',', '}', ']', '"', ':', ' ', 'x', '/', '\t', ''),
        (v, n, ch) => {
          const text = JSON.stringify(v, null, n % 3);
          expect(jsonSyntaxError(text)).toBeNull();
          const at = n % (text.length + 1);
          const edited = text.slice(0, at) + ch + text.slice(at + 1);
          let valid = true;
          try {
            JSON.parse(edited);
          } catch {
            valid = false;
          }
          const e = jsonSyntaxError(edited);
          expect(e === null).toBe(valid);
          if (e) expect(e.message, edited).not.toMatch(/^not valid JSON/); // the scan found the place
          if (e) expect(e.offset).toBeGreaterThanOrEqual(0);
          if (e) expect(e.offset).toBeLessThanOrEqual(edited.length);
        },
      ),
      fcParams(2_000, 50_000),
    );
  });
});
