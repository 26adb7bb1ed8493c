/**
 * Differential oracle: canonical() against Python's unicodedata NFKC and str.casefold(), over generated
 * strings that stress case folding, compatibility forms, combining marks and whitespace.
 *
 * Node's ICU and Python's unicodedata carry different Unicode versions (Node 20 here: 17.0; Python
 * 3.11: 14.0), so every generated code point is one that both assign: Python's category is not Cn and
 * Node's \p{Cn} is false. Surrogates are left out (a lone surrogate cannot be declared; see hostile.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonical } from '../../src/names.js';
import { PythonOracle } from './python-oracle.js';
import { prng, SEED, size } from './size.js';

const STRINGS = size(100_000, 1_000_000);
const BATCH = 2_000;

const WHITE_SPACE = (() => {
  let s = '';
  for (let cp = 0; cp < 0x110000; cp++)
    if (/\p{White_Space}/u.test(String.fromCodePoint(cp))) s += String.fromCodePoint(cp);
  return s;
})();

/** Code points chosen for what they do to NFKC and case folding. */
const STRESS = [
  'ß',
  'ẞ',
  'ς',
  'Σ',
  'σ',
  'İ',
  'ı',
  'i',
  'I',
  'K',
  'Å',
  'Ω',
  'ſ',
  'ﬅ',
  'ﬆ',
  'ﬁ',
  'ﬂ',
  'ﬀ',
  'ﬃ',
  'ﬄ',
  'ﬓ',
  'ﬗ',
  'ǅ',
  'Ǆǅǆ',
  'ǈ',
  'ǋ',
  'ǲ',
  'Ǳ',
  'ΐ',
  'ΰ',
  'ᾼ',
  'ᾈ',
  'ᾳ',
  'ῼ',
  'ͅ',
  'ϐ',
  'ϑ',
  'ϕ',
  'ϖ',
  'ϰ',
  'ϱ',
  'ϵ',
  'ẛ',
  'ẞ',
  'Ꭰ',
  'ꭰ',
  'Ᏸ',
  'ᏸ',
  'ŉ',
  'ǰ',
  'ẖ',
  'ẗ',
  'ẘ',
  'ẙ',
  'ẚ',
  'և',
  'µ',
  'ﬀ',
  '㎏',
  '㍱',
  '㋿',
  '①',
  'Ⓐ',
  'ⓐ',
  'Ⅻ',
  'ⅻ',
  '¹',
  '²',
  '³',
  'ⁱ',
  'ⁿ',
  '₀',
  'ᵃ',
  'ª',
  'º',
  '½',
  '™',
  '℡',
  '℃',
  'ℌ',
  'ℑ',
  '𝐀',
  '𝔄',
  '𝕬',
  'Ａ',
  'ｚ',
  '０',
  '～',
  'ｶ',
  'ﾞ',
  'ﾟ',
  'ガ',
  'か',
  '゙',
  '゚',
  '가',
  'ᄀ',
  'ᅡ',
  'ᆨ',
  'ㄱ',
  'Ꮿ',
  'Ⴀ',
  'ა',
  'Ა',
  '𐐀',
  '𐐨',
  '𐒰',
  '𞤀',
  '𖹀',
  'Ⰰ',
  'ⰰ',
  'Ⲁ',
  'Ꙁ',
  'Ꜳ',
  'ꞵ',
  'Ɫ',
  'ɫ',
  'Ɑ',
  'ȿ',
  'Ȿ',
  '\u0300',
  '\u0301',
  '\u0307',
  '\u0308',
  '\u0323',
  '\u0327',
  '\u0342',
  '\u0313',
  '\u0314',
  '\u20d7',
  '\u1ab0',
  '\u0e33',
  '\u0eb3',
  'ﷺ',
  'ﷻ',
  '﷽',
  'ﺀ',
  'ﻷ',
  '\u00a8',
  '\u00b4',
  '\u02d8',
  '\u1fbf',
  '\u1fef',
  '\u2011',
  '\u2024',
  '\u2025',
  '\u2026',
  '\u2033',
  '\u2057',
  '\u2100',
  '\u33c7',
];

/** Ranges sampled for coverage of whole scripts with case pairs and compatibility forms. */
const RANGES: readonly (readonly [number, number])[] = [
  [0x0020, 0x007e],
  [0x00a0, 0x024f],
  [0x0250, 0x02ff],
  [0x0300, 0x036f],
  [0x0370, 0x03ff],
  [0x0400, 0x052f],
  [0x0530, 0x058f],
  [0x10a0, 0x10ff],
  [0x1100, 0x11ff],
  [0x13a0, 0x13fd],
  [0x1c80, 0x1cbf],
  [0x1d00, 0x1dbf],
  [0x1e00, 0x1fff],
  [0x2070, 0x209c],
  [0x2100, 0x218b],
  [0x2460, 0x24ff],
  [0x2c00, 0x2c7f],
  [0x2c80, 0x2cff],
  [0x3000, 0x30ff],
  [0x3130, 0x318f],
  [0x3200, 0x33ff],
  [0xa640, 0xa69f],
  [0xa720, 0xa7ff],
  [0xab70, 0xabbf],
  [0xac00, 0xd7a3],
  [0xfb00, 0xfb4f],
  [0xfe30, 0xfe6f],
  [0xfe70, 0xfeff],
  [0xff00, 0xffef],
  [0x10400, 0x1044f],
  [0x104b0, 0x104ff],
  [0x10570, 0x105bf],
  [0x10c80, 0x10cff],
  [0x118a0, 0x118ff],
  [0x16e40, 0x16e9f],
  [0x1d400, 0x1d7ff],
  [0x1e900, 0x1e95f],
  [0x1f100, 0x1f1ff],
];

function assignedInBoth(ranges: readonly (readonly [number, number])[]): (cp: number) => boolean {
  const python = new Uint8Array(0x110000);
  for (const [first, last] of ranges) python.fill(1, first, last + 1);
  const both = new Uint8Array(0x110000);
  for (let cp = 0; cp < 0x110000; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (python[cp] === 1 && !/\p{Cn}/u.test(String.fromCodePoint(cp))) both[cp] = 1;
  }
  return (cp) => both[cp] === 1;
}

function generator(seed: number, inBoth: (cp: number) => boolean): () => string {
  const random = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const all: number[] = [];
  for (let cp = 0; cp < 0x110000; cp++) if (inBoth(cp)) all.push(cp);
  const whiteSpace = [...WHITE_SPACE];
  const stress = STRESS.flatMap((s) => [...s]).filter((c) => inBoth(c.codePointAt(0)!));
  const fromRange = (): string => {
    for (;;) {
      const [first, last] = pick(RANGES);
      const cp = first + Math.floor(random() * (last - first + 1));
      if (inBoth(cp)) return String.fromCodePoint(cp);
    }
  };
  const piece = (): string => {
    const r = random();
    if (r < 0.3) return pick(stress);
    if (r < 0.55) return fromRange();
    if (r < 0.7) return String.fromCodePoint(pick(all));
    if (r < 0.8) return pick(whiteSpace);
    return String.fromCharCode(0x61 + Math.floor(random() * 26) - (random() < 0.5 ? 32 : 0));
  };
  return () => {
    let s = '';
    const lead = random() < 0.25 ? Math.floor(random() * 3) + 1 : 0;
    for (let i = 0; i < lead; i++) s += pick(whiteSpace);
    const n = Math.floor(random() * 10);
    for (let i = 0; i < n; i++) s += piece();
    const trail = random() < 0.25 ? Math.floor(random() * 3) + 1 : 0;
    for (let i = 0; i < trail; i++) s += pick(whiteSpace);
    return s;
  };
}

const hex = (s: string): string =>
  [...s].map((c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`).join(' ');

describe('canonical() against Python unicodedata + str.casefold()', () => {
  let oracle: PythonOracle;
  beforeAll(async () => {
    oracle = await PythonOracle.start(WHITE_SPACE);
  });
  afterAll(async () => {
    await oracle.close();
  });

  it('agrees on the White_Space set being trimmed (and Python strip() alone would not)', async () => {
    expect(WHITE_SPACE).toContain('\u0085');
    expect(WHITE_SPACE).toContain('\u3000');
    expect(WHITE_SPACE).not.toContain('\u001c');
    // U+001C..U+001F are not White_Space: canonical() keeps them, and so does the oracle's explicit strip.
    const [form] = await oracle.canonical(['\u001cx\u001f']);
    expect(form).toBe('\u001cx\u001f');
    expect(canonical('\u001cx\u001f')).toBe(form);
  });

  it('agrees on hand-picked folding cases', async () => {
    const cases = [
      'Straße',
      'STRASSE',
      'ΣΊΣΥΦΟΣ',
      'σίσυφος',
      'İstanbul',
      'ıi',
      'ᏣᎳᎩ',
      'ꮳꮃꭹ',
      'ǅemal',
      'ǈubljana',
      'ﬁle',
      'ｓｅａｒｃｈ',
      'x²',
      '\u0085 tool \u3000',
      'e\u0301',
      'Å',
      'ᾈ',
      'ΐ',
      '㎏',
      'Ⅻ',
    ];
    const expected = await oracle.canonical(cases);
    expect(cases.map((c) => canonical(c))).toEqual(expected);
    expect(canonical('Straße')).toBe('strasse');
    expect(canonical('\u0085 tool \u3000')).toBe('tool');
  });

  it(`agrees on ${STRINGS.toLocaleString('en')} generated strings of code points assigned in both Unicode versions (seed ${SEED})`, async () => {
    const { unicode, assigned } = oracle.greeting;
    const inBoth = assignedInBoth(assigned);
    const next = generator(SEED, inBoth);
    const mismatches: string[] = [];
    let compared = 0;
    for (let done = 0; done < STRINGS; done += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, STRINGS - done) }, next);
      const expected = await oracle.canonical(batch);
      for (let i = 0; i < batch.length; i++) {
        const input = batch[i]!;
        const ours = canonical(input);
        compared++;
        if (ours !== expected[i] && mismatches.length < 20) {
          mismatches.push(`${hex(input)}: toolgate ${hex(ours)} / python ${hex(expected[i]!)}`);
        }
      }
    }
    expect(compared).toBe(STRINGS);
    expect(mismatches, `Node Unicode ${process.versions['unicode']}, Python Unicode ${unicode}, seed ${SEED}`).toEqual(
      [],
    );
  });
});
