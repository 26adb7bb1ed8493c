// Shadowing by number ranges, oneOf subsets, prefixes and path containment (issue 16): reported where it
// is proved, and — checked by property over real matchers — never reported where it does not hold.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { implied } from '../../src/policy-file/shadowing.js';
import { lintPolicyText } from '../../src/policy-file/index.js';
import { compileCondition } from '../../src/policy-file/matchers.js';
import { fcParams } from '../reliability/size.js';

const shadowed = (rules: string): string[] =>
  lintPolicyText(`version: 1\ntools:\n  t: {}\nrules:\n${rules}`, 'p.yaml')
    .findings.filter((f) => f.code === 'shadowed-rule')
    .map((f) => f.message.match(/rule "(\w+)"/)![1]!);

const rule = (name: string, when: string, result = 'deny'): string =>
  `  - { name: ${name}, tools: t, result: ${result}, when: { a: ${when} } }\n`;

describe('lint: shadowing proved by reasoning over conditions', () => {
  it('number ranges', () => {
    expect(shadowed(rule('e', '{ gt: 100 }') + rule('l', '{ gt: 200 }', 'ask'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ gt: 100 }') + rule('l', '{ gte: 100 }'))).toEqual([]); // 100 itself
    expect(shadowed(rule('e', '{ gte: 100 }') + rule('l', '{ gt: 100 }'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ gt: 200 }') + rule('l', '{ gt: 100 }'))).toEqual([]);
    expect(shadowed(rule('e', '{ lt: 10 }') + rule('l', '{ gte: 1, lt: 5 }'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ gt: 0, lt: 10 }') + rule('l', '{ gte: 1, lte: 10 }'))).toEqual([]); // 10
    expect(shadowed(rule('e', '{ gt: 0, lte: 10 }') + rule('l', '{ gte: 1, lte: 10 }'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ equals: 5 }') + rule('l', '{ gte: 5, lte: 5 }'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ lt: 100 }') + rule('l', '{ equals: 7 }'))).toEqual(['l']);
  });

  it('oneOf subsets and equals', () => {
    expect(shadowed(rule('e', '{ oneOf: [EUR, USD, GBP] }') + rule('l', '{ oneOf: [USD, EUR] }'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ oneOf: [EUR, USD] }') + rule('l', '{ oneOf: [USD, JPY] }'))).toEqual([]);
    expect(shadowed(rule('e', '{ oneOf: [EUR, USD] }') + rule('l', '{ equals: EUR }'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ prefix: "E" }') + rule('l', '{ oneOf: [EUR, ETB] }'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ equals: EUR }') + rule('l', '{ oneOf: [EUR, USD] }'))).toEqual([]);
  });

  it('prefix and path containment', () => {
    expect(shadowed(rule('e', '{ prefix: "https://" }') + rule('l', '{ prefix: "https://intra/" }'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ prefix: "https://intra/" }') + rule('l', '{ prefix: "https://" }'))).toEqual([]);
    expect(shadowed(rule('e', '{ path: /data/** }') + rule('l', '{ path: "/data/reports/*.csv" }'))).toEqual(['l']);
    expect(shadowed(rule('e', '{ path: [/tmp/**, /data/**] }') + rule('l', '{ path: [/data/a/**, /tmp/x] }'))).toEqual([
      'l',
    ]);
    expect(shadowed(rule('e', '{ path: /data/** }') + rule('l', '{ path: [/data/a/**, /etc/x] }'))).toEqual([]);
    expect(shadowed(rule('e', '{ path: /dat/** }') + rule('l', '{ path: /data/x }'))).toEqual([]);
    expect(shadowed(rule('e', '{ path: "/data/*/**" }') + rule('l', '{ path: /data/a/b }'))).toEqual([]); // not plain
    expect(shadowed(rule('e', '{ path: /data/** }') + rule('l', '{ path: data/x }'))).toEqual([]); // relative
  });

  it('what cannot be proved is not reported: other arguments, other ops, absent arguments', () => {
    expect(
      shadowed(rule('e', '{ gt: 1 }') + '  - { name: l, tools: t, result: allow, when: { b: { gt: 5 } } }\n'),
    ).toEqual([]);
    expect(shadowed(rule('e', '{ glob: "*.txt" }') + rule('l', '{ glob: "a*.txt" }'))).toEqual([]);
    expect(shadowed(rule('e', '{ exists: true }') + rule('l', '{ exists: false }'))).toEqual([]);
    expect(shadowed(rule('e', '{ exists: true }') + rule('l', '{ gt: 3 }'))).toEqual(['l']);
    // An empty range never matches: reported as never-matches, not as shadowed.
    expect(shadowed(rule('e', '{ gt: 1 }') + rule('l', '{ gt: 5, lt: 3 }'))).toEqual([]);
  });
});

// The property: whenever `implied(a, later)` says yes, every value the later tests accept, `a` accepts.
const NUMBERS = [-1, 0, 1, 5, 10, 100, 200];
const STRINGS = ['', 'E', 'EUR', 'ETB', 'USD', 'https://', 'https://intra/', 'https://intranet', 'http://x'];
const PATTERNS = [
  '/data/**',
  '/data/*',
  '/data/reports/*.csv',
  '/data/{a,b}/**',
  '/data/a',
  '/dat/**',
  '/data/.hidden/**',
  '/data/x y/**',
  '/data/r*/**',
  'data/**',
  'rel/*',
  '/**',
];
const SEGMENTS = [
  'data',
  'dat',
  'reports',
  'a',
  'b',
  'x.csv',
  '.hidden',
  'x y',
  'r1',
  '..',
  '.',
  '(x)',
  '!a',
  '+b',
  '@c',
  '*',
];

const op = fc.oneof(
  fc.record({ gt: fc.constantFrom(...NUMBERS) }),
  fc.record({ gte: fc.constantFrom(...NUMBERS) }),
  fc.record({ lt: fc.constantFrom(...NUMBERS) }),
  fc.record({ lte: fc.constantFrom(...NUMBERS) }),
  fc.record({ equals: fc.constantFrom<unknown>(...NUMBERS, ...STRINGS, null, true) }),
  fc.record({ oneOf: fc.array(fc.constantFrom<unknown>(...NUMBERS, ...STRINGS, null), { maxLength: 4 }) }),
  fc.record({ prefix: fc.constantFrom(...STRINGS) }),
  fc.record({
    path: fc.oneof(
      fc.constantFrom(...PATTERNS),
      fc.uniqueArray(fc.constantFrom(...PATTERNS), { minLength: 1, maxLength: 3 }),
    ),
  }),
  fc.record({ exists: fc.boolean() }),
);
const condition = fc
  .array(op, { minLength: 1, maxLength: 3 })
  .map((ops) => Object.assign({}, ...ops) as Record<string, unknown>);
const PATHS = [
  '/data',
  '/data/a',
  '/data/b/c',
  '/data/reports/x.csv',
  '/data/reports/a/x.csv',
  '/data/.hidden/k',
  '/data/x y/z',
  '/data/r1/q',
  '/dat/a',
  '/data2/a',
  '/datax',
  'data/a',
  'rel/a',
  '/',
  '/data/(x)',
  '/data/../etc',
];
const value = fc.oneof(
  fc.constantFrom<unknown>(...NUMBERS, 4.5, 150, 100.5, ...STRINGS, null, true, undefined),
  fc.constantFrom(...PATHS),
  fc
    .tuple(fc.boolean(), fc.array(fc.constantFrom(...SEGMENTS), { minLength: 0, maxLength: 4 }))
    .map(([absolute, segments]) => (absolute ? '/' : '') + segments.join('/')),
);

describe('implied() never claims what does not hold', () => {
  it('for random earlier tests, later conditions and values (real matchers, picomatch included)', () => {
    let proved = 0;
    fc.assert(
      fc.property(op, condition, fc.array(value, { minLength: 20, maxLength: 20 }), (earlier, later, values) => {
        const a = compileCondition('a', earlier)[0]!;
        const tests = compileCondition('a', later);
        if (!implied(a, tests)) return;
        proved++;
        for (const v of values) {
          const present = v !== undefined;
          if (tests.every((b) => b.test(present, v) === true))
            expect(a.test(present, v), JSON.stringify({ earlier, later, v })).toBe(true);
        }
      }),
      fcParams(3_000, 100_000),
    );
    expect(proved).toBeGreaterThan(0);
  });

  it('for path patterns alone (containment against picomatch itself)', () => {
    const patterns = fc.uniqueArray(fc.constantFrom(...PATTERNS), { minLength: 1, maxLength: 2 });
    let proved = 0;
    fc.assert(
      fc.property(patterns, patterns, (earlier, later) => {
        const a = compileCondition('a', { path: earlier })[0]!;
        const b = compileCondition('a', { path: later })[0]!;
        if (!implied(a, [b])) return;
        proved++;
        for (const v of PATHS)
          if (b.test(true, v) === true) expect(a.test(true, v), JSON.stringify({ earlier, later, v })).toBe(true);
      }),
      fcParams(1_000, 20_000),
    );
    expect(proved).toBeGreaterThan(0);
  });
});
