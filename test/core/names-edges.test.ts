import { describe, expect, it } from 'vitest';
import { declaredName, displaySafe } from '../../src/names.js';
import { ConfigurationError, defineTool, ToolRegistry } from '../../src/index.js';
import { parsePolicy } from '../../src/policy-file/index.js';

describe('declared names: Default_Ignorable code points are refused (issue 11)', () => {
  const invisible = {
    'HANGUL FILLER only': '\u3164',
    'HALFWIDTH HANGUL FILLER only': '\uFFA0',
    'HANGUL CHOSEONG FILLER only': '\u115F',
    'a variation selector': 'search\uFE0F',
    'a supplementary variation selector': 'search\u{E0100}',
    'COMBINING GRAPHEME JOINER': 'sea\u034Frch',
    'a tag character': 'search\u{E0041}',
  };
  for (const [what, name] of Object.entries(invisible)) {
    it(`refuses ${what}`, () => {
      expect(() => declaredName(name, 'tool')).toThrow(ConfigurationError);
      expect(() => declaredName(name, 'tool')).toThrow(/default-ignorable character U\+/);
      expect(() => defineTool({ name, parameters: { type: 'object' }, execute: () => 1 })).toThrow(ConfigurationError);
    });
  }

  it('refuses them in a registry and in a policy file too', () => {
    expect(() =>
      new ToolRegistry().register({ name: '\u3164', parameters: { type: 'object' }, execute: () => 1 }),
    ).toThrow(/U\+3164/);
    const result = parsePolicy('version: 1\ntools:\n  "\u3164\u3164": {}\n');
    expect(result.ok).toBe(false);
    expect(result.issues?.[0]?.code).toBe('invalid-name');
  });

  it('still accepts visible names, including non-Latin ones', () => {
    expect(declaredName('検索', 'tool')).toBe('検索');
    expect(declaredName('github:search', 'tool')).toBe('github:search');
  });
});

describe('displaySafe: what a person is shown', () => {
  it('writes controls, bidi and other invisible characters as \\u{…}', () => {
    expect(displaySafe('a\u202Eb\u200Bc\u0000d\u2028e\u3164f')).toBe(
      'a\\u{202E}b\\u{200B}c\\u{0000}d\\u{2028}e\\u{3164}f',
    );
    expect(displaySafe('plain text, ümlaut, 検索')).toBe('plain text, ümlaut, 検索');
  });
});
