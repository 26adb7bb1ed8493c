import { describe, expect, it } from 'vitest';
import { canonical, ConfigurationError, ToolAllowlist } from '../../src/index.js';
import { CANONICAL_CACHE_LIMIT, canonicalCacheSize, declaredName } from '../../src/names.js';

describe('canonical()', () => {
  it('treats case, full-width and surrounding white space as one name', () => {
    expect(canonical('Search')).toBe('search');
    expect(canonical('ｓｅａｒｃｈ')).toBe('search');
    expect(canonical('ＳＥＡＲＣＨ')).toBe('search');
    expect(canonical('\u3000search\u00a0')).toBe('search');
    expect(canonical(' \u0085search\t')).toBe('search');
  });

  it('applies full case folding, not toLowerCase', () => {
    expect(canonical('Straße')).toBe('strasse');
    expect(canonical('STRASSE')).toBe(canonical('Straße'));
    expect(canonical('ẞ')).toBe('ss');
    expect(canonical('ΟΔΟΣ')).toBe('οδοσ'); // final sigma folds to σ, not ς
    expect(canonical('οδος')).toBe('οδοσ');
    expect(canonical('ﬁle')).toBe('file');
    expect(canonical('ǅ')).toBe('d\u017e'); // NFKC splits the digraph, folding lowers both halves
    expect(canonical('Ǆ')).toBe(canonical('ǆ'));
    expect(canonical('ꭰ')).toBe('Ꭰ'); // Cherokee folds to upper case
    expect(canonical('İ')).toBe('i̇');
    expect('ß'.toLowerCase()).toBe('ß'); // the reason toLowerCase is not enough
  });

  it('is idempotent', () => {
    for (const s of ['Straße', 'ＡＢＣ', 'Ǆǅǆ', 'x²', 'Ⅻ', 'ﬃ', 'ΣΑΣ', 'e\u0301', 'ꭰꭱ', '  A  ']) {
      expect(canonical(canonical(s))).toBe(canonical(s));
    }
  });

  it('keeps namespaces: mcp:search is not search', () => {
    expect(canonical('MCP:Search')).toBe('mcp:search');
    expect(canonical('mcp:search')).not.toBe(canonical('search'));
  });

  it('rejects a non-string with a TypeError', () => {
    expect(() => canonical(42 as unknown as string)).toThrow(TypeError);
  });

  it('keeps its cache bounded under endless unique names', () => {
    for (let i = 0; i < CANONICAL_CACHE_LIMIT * 3; i++) canonical(`Tool-${i}`);
    expect(canonicalCacheSize()).toBeLessThanOrEqual(CANONICAL_CACHE_LIMIT);
    const huge = 'A'.repeat(1_000_000);
    expect(canonical(huge)).toBe('a'.repeat(1_000_000));
    expect(canonicalCacheSize()).toBeLessThanOrEqual(CANONICAL_CACHE_LIMIT);
  });
});

describe('declared names', () => {
  it.each([
    ['empty', ''],
    ['white space only', ' \u3000 '],
    ['zero-width space', 'sea\u200brch'],
    ['bidi override', 'search\u202e'],
    ['control character', 'search\u0007'],
    ['lone surrogate', 'search\ud800'],
  ])('refuses a name that is %s', (_what, name) => {
    expect(() => declaredName(name, 'test')).toThrow(ConfigurationError);
    expect(() => ToolAllowlist.resolve([name])).toThrow(ConfigurationError);
  });

  it('names the offending code point', () => {
    expect(() => declaredName('a\u200db', 'agent x')).toThrow(/U\+200D/);
  });
});
