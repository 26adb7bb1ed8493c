/**
 * Attack (argument validation, src/schema.ts `withFormats`): ajv-formats adds `formatMinimum`, `formatMaximum`,
 * `formatExclusiveMinimum` and `formatExclusiveMaximum` (a date-time's earliest / latest value). Its comparison of
 * `date-time`, `time` and `iso-date-time` read the text with `new Date` and answered "not comparable" (undefined,
 * which no limit refuses) for a value the format itself accepts but `Date` does not parse — a leap second
 * (`23:59:60Z`), an offset of hours only (`+01`) — or whose instant is 0 (`1970-01-01T00:00:00Z`, read as false): a
 * tool whose schema allows dates from 2020 on ran with 1970, and one allowing times until noon ran at midnight.
 * `iso-time` compared the digits, its offset ignored: 11:00:00-05:00 (16:00 UTC) was before noon UTC. These
 * are compared exactly now.
 */
import { describe, expect, it } from 'vitest';
import { registryWith } from './fixtures/schema-tool.js';

const D2020 = 'https://json-schema.org/draft/2020-12/schema';

function schema(format: string, limits: Record<string, string>): Record<string, unknown> {
  return { type: 'object', properties: { at: { type: 'string', format, ...limits } } };
}

async function runs(s: Record<string, unknown>, at: string): Promise<boolean> {
  for (const dialect of [undefined, D2020]) {
    const { registry, ran } = registryWith(dialect === undefined ? s : { $schema: dialect, ...s });
    const result = await registry.invoke('pay', { at });
    expect(result.status === 'ok').toBe(ran.length === 1);
    if (dialect !== undefined) return result.status === 'ok';
  }
  throw new Error('unreachable');
}

// [format, limits, a value the limits refuse, a value they accept]
const CASES: [string, Record<string, string>, string, string][] = [
  ['date-time', { formatMinimum: '2020-01-01T00:00:00Z' }, '1970-01-01T00:00:00Z', '2020-01-01T00:00:00Z'],
  ['date-time', { formatMinimum: '2020-01-01T00:00:00Z' }, '1970-01-01T01:00:00+01:00', '2020-01-01T01:00:00+01:00'],
  ['date-time', { formatMaximum: '2000-01-01T00:00:00Z' }, '2016-12-31T23:59:60Z', '1998-12-31T23:59:60Z'],
  ['date-time', { formatMaximum: '2000-01-01T00:00:00Z' }, '2030-01-01T00:00:00+01', '1999-12-31T23:00:00+01'],
  [
    'date-time',
    { formatExclusiveMaximum: '2000-01-01T00:00:00Z' },
    '2000-01-01T01:00:00+01',
    '1999-12-31T23:59:59.999Z',
  ],
  ['date-time', { formatMaximum: '2000-01-01T00:00:00Z' }, '2000-01-01T00:00:00.0001Z', '2000-01-01T00:00:00.000Z'],
  ['date-time', { formatMinimum: '0050-06-01T00:00:00Z' }, '0050-01-01T00:00:00Z', '0050-06-01t00:00:00z'],
  ['time', { formatMaximum: '12:00:00Z' }, '23:59:60Z', '11:59:59.5Z'],
  ['time', { formatMaximum: '12:00:00Z' }, '23:00:00+01', '12:30:00+01'],
  ['time', { formatMinimum: '12:00:00Z' }, '11:00:00Z', '13:00:00+01:00'],
  ['iso-time', { formatMaximum: '12:00:00Z' }, '11:00:00-05:00', '11:00:00+00:00'],
  ['iso-time', { formatMaximum: '12:00:00' }, '12:00:01', '11:59:59'],
  ['iso-date-time', { formatMaximum: '2000-01-01T12:00:00Z' }, '2000-01-01T23:59:60Z', '2000-01-01T11:00:00Z'],
  ['iso-date-time', { formatMaximum: '2000-01-01T12:00:00Z' }, '2000-01-01T15:00:00+01', '2000-01-01T12:00:00+01'],
];

describe('formatMinimum / formatMaximum', () => {
  it.each(CASES)('%s %j: %j refused, %j runs', async (format, limits, refused, accepted) => {
    expect(await runs(schema(format, limits), refused)).toBe(false);
    expect(await runs(schema(format, limits), accepted)).toBe(true);
  });

  it('a fraction of a million digits is compared in linear time', async () => {
    const zeros = '0'.repeat(1_000_000);
    expect(await runs(schema('time', { formatMaximum: '12:00:00Z' }), `12:00:00.${zeros}1Z`)).toBe(false);
    expect(await runs(schema('time', { formatMaximum: '12:00:00.1Z' }), `12:00:00.${zeros}1Z`)).toBe(true);
    const at = `2000-01-01T00:00:00.${zeros}1Z`;
    expect(await runs(schema('date-time', { formatMaximum: '2000-01-01T00:00:00Z' }), at)).toBe(false);
  });

  it('a value that is not of the format is refused, limits or not', async () => {
    expect(await runs(schema('date-time', { formatMinimum: '2020-01-01T00:00:00Z' }), 'tomorrow')).toBe(false);
    expect(await runs(schema('time', { formatMaximum: '12:00:00Z' }), '25:00:00Z')).toBe(false);
  });
});
