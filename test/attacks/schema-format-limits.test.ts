/**
 * Attack (argument validation, src/schema.ts): ajv-formats adds `formatMinimum`, `formatMaximum`,
 * `formatExclusiveMinimum` and `formatExclusiveMaximum` (a date-time's earliest / latest value; Ajv's own keywords,
 * in no JSON Schema dialect). Its comparison of `date-time`, `time` and `iso-date-time` read the text with `new Date`
 * and answered "not comparable" (undefined, which no limit refuses) for a value the format itself accepts but
 * `Date` does not parse — a leap second (`23:59:60Z`), an offset of hours only (`+01`) — or whose instant is 0
 * (`1970-01-01T00:00:00Z`, read as false): a tool whose schema allows dates from 2020 on ran with 1970. `iso-time`
 * compared the digits, its offset ignored. These keywords are not added, and a schema using one does not compile:
 * the tool is refused at registration, naming the keyword — never ignored.
 */
import { describe, expect, it } from 'vitest';
import { registryWith } from './fixtures/schema-tool.js';

const D2020 = 'https://json-schema.org/draft/2020-12/schema';

function schema(format: string, limits: Record<string, string>): Record<string, unknown> {
  return { type: 'object', properties: { at: { type: 'string', format, ...limits } } };
}

// [format, limits, a value the limits refuse, a value they accept]: what ran before (with ajv-formats' comparison)
const CASES: [string, Record<string, string>][] = [
  ['date-time', { formatMinimum: '2020-01-01T00:00:00Z' }],
  ['date-time', { formatMaximum: '2000-01-01T00:00:00Z' }],
  ['date-time', { formatExclusiveMaximum: '2000-01-01T00:00:00Z' }],
  ['date-time', { formatExclusiveMinimum: '2000-01-01T00:00:00Z' }],
  ['time', { formatMaximum: '12:00:00Z' }],
  ['iso-time', { formatMaximum: '12:00:00Z' }],
  ['iso-date-time', { formatMaximum: '2000-01-01T12:00:00Z' }],
];

describe('formatMinimum / formatMaximum', () => {
  it.each(CASES)('%s %j does not compile, in any dialect, nested or not', (format, limits) => {
    const keyword = Object.keys(limits)[0]!;
    for (const dialect of [undefined, D2020]) {
      const nested = { type: 'object', properties: { at: { anyOf: [{ type: 'string', format, ...limits }] } } };
      for (const s of [schema(format, limits), nested])
        expect(() => registryWith(dialect === undefined ? s : { $schema: dialect, ...s })).toThrow(
          new RegExp(`${keyword} is not read by toolgate`),
        );
    }
  });

  it('the same format without limits is checked', async () => {
    const { registry, ran } = registryWith(schema('date-time', {}));
    expect((await registry.invoke('pay', { at: 'tomorrow' })).status).toBe('refused');
    expect((await registry.invoke('pay', { at: '1970-01-01T00:00:00Z' })).status).toBe('ok');
    expect(ran).toEqual([{ at: '1970-01-01T00:00:00Z' }]);
  });
});
