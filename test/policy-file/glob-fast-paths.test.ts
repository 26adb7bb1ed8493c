import { describe, expect, it } from 'vitest';
import { compileGlobMatcher, globStructure } from '../../src/policy-file/glob.js';
import { isGlob } from '../../src/policy-file/matchers.js';

// Issue 25: an exact name is known without compiling a matcher, and a segment without wildcard syntax is
// its own text without being read char by char. Both shortcuts must answer as the full compilation does.
const PATTERNS = [
  'tool_1',
  'github:repos/delete',
  'ns/a.b-c',
  'ﬁle', // a compatibility ligature (canonicalised elsewhere; here just a character)
  'd\uD800x', // a lone surrogate
  '',
  '{x}', // braces without a comma or range are literal
  'a{b,c}',
  'a{1..3}',
  'a\\*b',
  'a\\',
  'x*',
  'x?',
  '[ab]',
  '[a',
  '**',
];

describe('glob fast paths', () => {
  it('isGlob agrees with the compiled matcher, and a name without * ? [ { \\ is no glob', () => {
    for (const p of PATTERNS) {
      expect(isGlob(p), p).toBe(compileGlobMatcher(p, { names: true }).isGlob);
      if (!/[*?[{\\]/.test(p)) expect(isGlob(p), p).toBe(false);
    }
    expect(isGlob('{x}')).toBe(false);
    expect(isGlob('a\\*b')).toBe(false);
  });

  it('a literal segment is the same text as one spelt with escapes, and matches just that text', () => {
    expect(globStructure('/data/ab/x')).toEqual(globStructure('/data/a\\b/\\x'));
    const odd = '/d\uD800x/ﬁle/';
    expect(globStructure(odd).alternatives).toEqual([
      [
        { kind: 'literal', text: '' },
        { kind: 'literal', text: 'd\uD800x' },
        { kind: 'literal', text: 'ﬁle' },
      ],
    ]);
    const m = compileGlobMatcher(odd);
    expect(m.isGlob).toBe(false);
    expect(m.test('/d\uD800x/ﬁle')).toBe(true);
    expect(m.test('/d\uD800x/file')).toBe(false);
    expect(globStructure('/data/{x}/**').alternatives[0]![2]).toEqual({ kind: 'literal', text: '{x}' });
  });
});
